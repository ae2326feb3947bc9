"""The judged outcome's prompts, in English and in Russian: completeness and frustration.

Issue 42 item 3 (after Opik's thread metrics "conversation completeness" and "user
frustration"): a closed session is shown to the judge as its turns, each user message and
each answer in its own fence. Completeness asks the judge to list what the user wanted
(their intentions) and whether the conversation satisfied each, so the score is the share
satisfied, counted by us rather than guessed as one number; frustration is one 0-1 rating
with a rubric. Each prompt exists in both languages; a conversation is judged with the
prompts of its users' language (`evaluators.conversations.judged`). The task names are the
same in both languages, the versions (hashes of the whole text) differ.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from evaluators.judge.prompts.base import Prompt

COMPLETENESS = "conversation_completeness"
FRUSTRATION = "conversation_frustration"

_INTENTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "intentions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "intention": {"type": "string"},
                    "satisfied": {"type": "integer", "enum": [0, 1]},
                },
                "required": ["intention", "satisfied"],
            },
        },
        "reason": {"type": "string"},
    },
    "required": ["intentions"],
}
_RATING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reason": {"type": "string"},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["score"],
}

COMPLETENESS_EN = Prompt(
    task=COMPLETENESS,
    instructions="""
You read a conversation between a user and a help-centre assistant, turn by turn: each
user message and each assistant answer is in its own fence, numbered by turn.
1. List the user's intentions: each distinct thing the user came to get (an answer, an
   action, a way to do something). Greetings, thanks and small talk are not intentions; a
   question asked again in other words is the same intention, listed once.
2. For each intention decide whether the conversation satisfied it: 1 when an assistant
   answer gave the user what they wanted (a relevant, complete answer or the action they
   asked for), 0 when it did not (no answer, an evasive or irrelevant one, the user had to
   ask again without getting it, or the user gave up or asked for a person).
Judge only from the conversation; do not check facts against outside knowledge.
Write each intention briefly. Give a one-sentence reason, then the list.
""",
    schema=_INTENTIONS_SCHEMA,
)

COMPLETENESS_RU = Prompt(
    task=COMPLETENESS,
    instructions="""
Вы читаете диалог пользователя с ассистентом службы поддержки по репликам: каждое
сообщение пользователя и каждый ответ ассистента находятся в отдельной ограде и
пронумерованы по ходам диалога.
1. Перечислите намерения пользователя: каждую отдельную цель, ради которой он пришёл
   (получить ответ, выполнить действие, узнать, как что-то сделать). Приветствия,
   благодарности и светская беседа намерениями не являются; вопрос, заданный повторно
   другими словами, — это то же намерение, его указывают один раз.
2. Для каждого намерения решите, выполнено ли оно в диалоге: 1 — ответ ассистента дал
   пользователю то, что он хотел (уместный и полный ответ или запрошенное действие);
   0 — не дал (ответа нет, он уклончивый или не по теме, пользователю пришлось
   переспрашивать и он так и не получил ответ, пользователь ушёл или попросил человека).
Судите только по диалогу, не проверяйте факты по внешним знаниям.
Формулируйте намерения кратко. Сначала дайте причину одним предложением, затем список.
""",
    schema=_INTENTIONS_SCHEMA,
)

FRUSTRATION_EN = Prompt(
    task=FRUSTRATION,
    instructions="""
You read a conversation between a user and a help-centre assistant, turn by turn: each
user message and each assistant answer is in its own fence, numbered by turn. Rate how
frustrated the user became with the assistant, from 0 to 1:
- 0.0: no sign of frustration: the user got answers and moved on or thanked;
- 0.5: some frustration: the user repeated or rephrased a question, complained that an
  answer did not help, or sounded impatient;
- 1.0: strong frustration: the user repeated themselves several times, wrote angrily or
  in capitals, called the assistant useless, demanded a person or left in annoyance.
Intermediate values are allowed. Rate the user's frustration with this conversation only,
not with the product or the situation they write about (a lost card is not frustration
with the assistant). Give a one-sentence reason first, then the score.
""",
    schema=_RATING_SCHEMA,
)

FRUSTRATION_RU = Prompt(
    task=FRUSTRATION,
    instructions="""
Вы читаете диалог пользователя с ассистентом службы поддержки по репликам: каждое
сообщение пользователя и каждый ответ ассистента находятся в отдельной ограде и
пронумерованы по ходам диалога. Оцените, насколько пользователь был раздражён работой
ассистента, от 0 до 1:
- 0.0: признаков раздражения нет: пользователь получал ответы, шёл дальше или благодарил;
- 0.5: есть раздражение: пользователь повторял или перефразировал вопрос, жаловался, что
  ответ не помог, торопил;
- 1.0: сильное раздражение: пользователь несколько раз повторял одно и то же, писал
  грубо или заглавными буквами, называл ассистента бесполезным, требовал живого
  человека или ушёл с досадой.
Допустимы промежуточные значения. Оценивайте раздражение именно этим диалогом, а не
продуктом или ситуацией, о которой пишет пользователь (потерянная карта — не раздражение
ассистентом). Сначала дайте причину одним предложением, затем оценку.
""",
    schema=_RATING_SCHEMA,
)

PROMPTS: Mapping[str, Mapping[str, Prompt]] = MappingProxyType(
    {
        COMPLETENESS: MappingProxyType({"en": COMPLETENESS_EN, "ru": COMPLETENESS_RU}),
        FRUSTRATION: MappingProxyType({"en": FRUSTRATION_EN, "ru": FRUSTRATION_RU}),
    }
)
"""Prompt by metric, then by the conversation's language."""
