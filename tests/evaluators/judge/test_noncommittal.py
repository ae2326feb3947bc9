"""A text that claims nothing ("Я не знаю") is decomposed into no claim, also by a server
that enforces the requested schema while decoding (issue 29): its numbers are what seed 002
says for each metric, never a score of a claim the judge had to invent.

The scripted server plays a small model behind such a server (llama.cpp's grammar, vLLM's
guided JSON): for a refusal it writes an empty list, unless the schema sent with the request
demands more items, and then it invents them, as a constrained decoder forces it to.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from evaluators.judge.api import score
from evaluators.judge.metric import JudgeScore
from evaluators.outcome import Outcome, Skipped
from tests.evaluators.judge.helpers import make_judge, sample
from tests.fixtures.embedder import VectorEmbedder
from tests.fixtures.llm_server import Reply, ScriptedLLM, auto_reply, prompt_text, requested_schema

QUESTION = "Какая столица Франции?"
REFUSAL = "Я не знаю, какая столица Франции."  # seed 002's noncommittal example
CLAIMLESS = "Да, так можно сделать."  # a reference that states no fact and names nothing
REFERENCE = "Столица Франции — Париж."
INVENTED = "Отвечающий не знает, какая столица Франции."
"""What a small model writes when the grammar forces a claim out of a refusal."""

DECOMPOSED = {"statements": "statements", "entities": "entities", "context_recall": "statements"}
"""Judge task -> the array of claims (or entities) it decomposes a text into."""


def _task(text: str) -> str:
    return text.split("ragpulse judge task: ", 1)[1].split(" ", 1)[0]


def enforcing_model(body: dict[str, Any]) -> Reply:
    """Replies of a model whose server decodes only what the request's schema allows."""
    text = prompt_text(body)
    user = str(body["messages"][-1]["content"])
    task = _task(text)
    if task in DECOMPOSED:
        key = DECOMPOSED[task]
        says_nothing = REFUSAL in user or CLAIMLESS in user
        items: list[Any] = [] if says_nothing else [REFERENCE]
        schema = requested_schema(body) or {}
        forced = schema.get("properties", {}).get(key, {}).get("minItems", 0)
        items += [INVENTED] * (forced - len(items))
        if task == "context_recall":
            items = [{"statement": s, "attributed": int(s == REFERENCE)} for s in items]
        return Reply(content={key: items})
    if task == "statement_support":  # an invented claim is in no passage
        return Reply(content={"verdicts": [{"item": 1, "supported": 0}]})
    if task == "entity_presence":
        return Reply(content={"verdicts": [{"item": 1, "found": 0}]})
    if task == "question_generation":
        found = re.search(r"exactly (\d+) question", text)
        assert found is not None, "the request says how many questions"
        n = int(found.group(1))
        return Reply(
            content={"questions": [{"question": QUESTION, "noncommittal": 1} for _ in range(n)]}
        )
    return auto_reply(body)


REFUSING = sample(QUESTION, [REFERENCE], answer=REFUSAL, reference=REFERENCE)
NOTHING_TO_RECALL = sample(QUESTION, [REFERENCE], answer=REFERENCE, reference=CLAIMLESS)


@pytest.mark.parametrize(
    ("metric", "case", "expected"),
    [
        # seed 002: the share of the answer's claims that the contexts support; a refusal
        # makes none, so the share is undefined: skipped, not 0 (nothing was hallucinated).
        ("faithfulness", REFUSING, Skipped("no statements")),
        # seed 002: the share of the answer's claims that are wrong and context-supported.
        ("noise_sensitivity_relevant", REFUSING, Skipped("no statements")),
        ("noise_sensitivity_irrelevant", REFUSING, Skipped("no statements")),
        # seed 002: "Уклончивые ответы типа 'Я не знаю' автоматически получают оценку 0.0".
        ("response_relevancy", REFUSING, JudgeScore(0.0, by_model={"openai/judge-a": 0.0})),
        # a reference that states nothing: no claim to recall, no entity to find
        ("context_recall", NOTHING_TO_RECALL, Skipped("no statements")),
        ("context_entity_recall", NOTHING_TO_RECALL, Skipped("no entities")),
    ],
)
def test_a_text_that_claims_nothing_gets_no_invented_claim(
    llm_server: ScriptedLLM, metric: str, case: Any, expected: Outcome
) -> None:
    llm_server.fallback = enforcing_model
    embedder = VectorEmbedder({QUESTION: [1.0, 0.0]})
    [outcome] = score(metric, [case], make_judge(llm_server), embedder=embedder)
    assert outcome == expected
    decomposing = [r for r in llm_server.requests if _task(prompt_text(r)) in DECOMPOSED]
    assert decomposing or metric == "response_relevancy"
    for body in decomposing:
        schema = requested_schema(body)
        assert schema is not None, "the schema is sent for the server to enforce"
        array = schema["properties"][DECOMPOSED[_task(prompt_text(body))]]
        assert array.get("minItems", 0) == 0  # an empty list must stay decodable
        assert array["maxItems"] >= 2  # the cap against a small model repeating itself
