"""A topic's short name written by the LLM judge from its keywords and example questions.

c-TF-IDF keywords ("card, lost, freeze / заблокировать, карту") say what words a topic's
questions share; a content team reads "Blocking a lost card / Блокировка утерянной карты"
faster. `name_topic` asks the judge once for a topic: its keywords per language and example
questions go in fenced (they are users' words: data, never instructions, as in every judge
prompt), one short name per language of the examples comes back as structured output.
The judge client caches the answer by model, prompt version and the rendered input, so the
same keywords and examples are never paid for twice; the caller decides which topics are
named (new ones, within a budget).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evaluators.judge.prompts.base import Prompt, fence, fence_items
from evaluators.judge.protocol import Judge

METRIC = "topic_name"
"""The name under which the judge records these requests (its ledger, cache and stats)."""
MAX_NAME_CHARS = 60
MAX_EXAMPLES = 8
"""Example questions shown to the judge at most (the ones nearest the centroid first)."""

TOPIC_NAME = Prompt(
    task="topic_name",
    instructions="""
You name a topic of the questions users ask a support assistant. You receive the topic's
keywords (the words its questions share, per language) and example questions from it.
Write a short name for what these users want: 2 to 6 words, a noun phrase such as
"Blocking a lost card", no quotes, no final period, not a question. Write one name for each
language the example questions are written in, in that language (questions in Russian and
English: a Russian name and an English name that say the same), with its ISO 639-1 code.
Name the common intent of the examples; ignore a stray example that does not fit.
""",
    schema={
        "type": "object",
        "properties": {
            "names": {
                "type": "array",
                "minItems": 1,
                "maxItems": 4,
                "items": {
                    "type": "object",
                    "properties": {
                        "language": {"type": "string", "minLength": 2, "maxLength": 8},
                        "name": {"type": "string", "minLength": 1, "maxLength": MAX_NAME_CHARS},
                    },
                    "required": ["language", "name"],
                },
            }
        },
        "required": ["names"],
    },
)


@dataclass(frozen=True)
class Named:
    """The judge's names of a topic, language -> name, and the model that wrote them."""

    names: Mapping[str, str]
    model: str
    prompt: str


def name_input(keywords: Mapping[str, Sequence[str]], examples: Sequence[str]) -> str:
    """The user message: the keywords of each language and the examples, fenced."""
    parts = [
        fence("keywords", ", ".join(words), language=lang)
        for lang, words in sorted(keywords.items())
        if words
    ]
    parts.append(fence_items("example_questions", examples[:MAX_EXAMPLES]))
    return "\n\n".join(parts)


def _clean(data: Any) -> dict[str, str]:
    """language -> name from the validated answer: codes lower-cased, whitespace collapsed,
    cut to `MAX_NAME_CHARS`, quotes and a final period dropped, the first name of a
    language kept."""
    out: dict[str, str] = {}
    for item in data.get("names", []):
        lang = str(item["language"]).strip().lower().split("-")[0][:8]
        name = " ".join(str(item["name"]).split()).strip("\"'«»“”").rstrip(".")
        if lang and name and lang not in out:
            out[lang] = name[:MAX_NAME_CHARS]
    return out


async def name_topic(
    judge: Judge,
    keywords: Mapping[str, Sequence[str]],
    examples: Sequence[str],
    *,
    model: str,
) -> Named | None:
    """The judge `model`'s names of the topic (None: it gave no usable name). Raises the
    judge's `JudgeError` (budget, connection, schema after repair)."""
    data = await judge.ask(TOPIC_NAME, name_input(keywords, examples), model=model, metric=METRIC)
    names = _clean(data)
    if not names:
        return None
    return Named(names, model, TOPIC_NAME.version)
