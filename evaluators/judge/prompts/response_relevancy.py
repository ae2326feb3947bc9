"""Generate N questions that the answer would answer, each with a noncommittal flag (seed 002).

Seed 002 generates the questions from the answer "with account of the original question":
the default prompt shows the user's question too, so the generated questions keep its
scope and wording style, yet must be answered by the answer itself (an answer that covers
only part of the question yields questions about that part only, and scores lower).
`QUESTION_GENERATION_ANSWER_ONLY` (RAGAS's variant, the judge setting
`response_relevancy_with_question = false`) shows the answer alone. The number of questions
is part of the rendered input (and so of the cache key)."""

from __future__ import annotations

from typing import Any

from evaluators.judge.prompts.base import Prompt

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "questions": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "question": {"type": "string"},
                    "noncommittal": {"type": "integer", "enum": [0, 1]},
                },
                "required": ["question", "noncommittal"],
            },
        }
    },
    "required": ["questions"],
}

_NONCOMMITTAL = """
For each question also set noncommittal: 1 if the answer is evasive or non-committal
(it says it does not know, is unsure, cannot say, or avoids giving the information),
0 if it commits to actual information.
"""

QUESTION_GENERATION = Prompt(
    task="question_generation",
    instructions="""
You read an answer given by an assistant and write the questions it answers. You also see
the question the user originally asked, as context: use it to keep the subject, the scope
and the style of the questions close to how this user asks. But every question you write
must be one that this answer, on its own, is a direct and complete reply to: ask only
about what the answer actually says. If the answer covers only part of the user's question,
ask about that part only; if it talks about something else, ask about what it talks about;
never copy the user's question when the answer does not fully reply to it.
Write the number of different questions requested by the user message, phrased as a user
would ask them, in the language of the answer.
"""
    + _NONCOMMITTAL,
    schema=_SCHEMA,
    revision=2,
)

QUESTION_GENERATION_ANSWER_ONLY = Prompt(
    task="question_generation",
    instructions="""
You read an answer given by an assistant and write the questions it answers. Write the
number of different questions requested by the user message, each one a question this
answer would be a direct and complete reply to, phrased as a user would ask it, in the
language of the answer.
"""
    + _NONCOMMITTAL,
    schema=_SCHEMA,
)
