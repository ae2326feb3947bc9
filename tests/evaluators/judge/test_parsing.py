"""Finding and validating the judge's JSON: fences, prose around it, shapes and ranges."""

from __future__ import annotations

import pytest

from evaluators.judge.errors import JudgeInvalidOutput, JudgeOutOfRange, JudgeSchemaError
from evaluators.judge.parsing import extract_json, looks_like_refusal, validate
from evaluators.judge.prompts.context_relevance import CONTEXT_RELEVANCE


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1}',
        '```json\n{"a": 1}\n```',
        'Here is my verdict:\n```\n{"a": 1}\n```\nThanks.',
        'Sure! {"a": 1} Hope this helps.',
        'Оценка: {"a": 1}',
    ],
)
def test_extract_json_finds_the_object(text: str) -> None:
    assert extract_json(text) == {"a": 1}


@pytest.mark.parametrize("text", ["", "no json here", '{"a": ', "[1, 2"])
def test_extract_json_rejects_non_json(text: str) -> None:
    with pytest.raises(JudgeInvalidOutput):
        extract_json(text)


def test_validate_shapes_and_ranges() -> None:
    schema = CONTEXT_RELEVANCE.schema
    ok = validate({"ratings": [{"context": 1.0, "score": True}]}, schema)
    assert ok == {"ratings": [{"context": 1, "score": 1}]}
    with pytest.raises(JudgeSchemaError):
        validate({"rating": []}, schema)
    with pytest.raises(JudgeSchemaError):
        validate({"ratings": [{"context": 1, "score": "high"}]}, schema)
    with pytest.raises(JudgeOutOfRange):
        validate({"ratings": [{"context": 1, "score": 3}]}, schema)
    with pytest.raises(JudgeOutOfRange):
        validate({"ratings": [{"context": 1, "score": 1.5}]}, schema)


def test_refusal_sentences_in_both_languages() -> None:
    assert looks_like_refusal("I'm sorry, but I can't help with that.")
    assert looks_like_refusal("Извините, я не могу выполнить эту просьбу.")
    assert not looks_like_refusal('Sorry, here it is: {"a": 1}')


def test_prompt_version_changes_with_the_words() -> None:
    from dataclasses import replace

    changed = replace(CONTEXT_RELEVANCE, instructions=CONTEXT_RELEVANCE.instructions + " ")
    assert changed.version != CONTEXT_RELEVANCE.version
    assert len(CONTEXT_RELEVANCE.version) == 12
