"""Every judge metric against a real model server: SmolLM2-135M-Instruct on llama-cpp-python,
reached through litellm over real HTTP, on English and Russian samples.

What a user self-hosting a small judge gets: the server refuses OpenAI's json_schema, the
client falls back once to llama.cpp's json_object + schema (grammar-constrained decoding),
and every sample ends as a value in range or a typed error, most as values. The metrics are
listed from the registry, so a new judge metric is covered without editing this file.

One English and one Russian sample: on the 2-core CI machine the model answers slowly
(~8 min for four samples, ~5 for these two; see README, "Judge");
pytest-timeout bounds it.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time

import pytest

from evaluators.judge import JudgeClient, JudgeConfig
from evaluators.judge.api import ascore
from evaluators.judge.metric import JudgeScore
from evaluators.outcome import Failed, Outcome, Skipped
from evaluators.registry import FAMILIES, known_names
from evaluators.sample import Context, Sample

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

MODEL = "openai/smollm2"
NOTHING_FOUND = {"no statements", "no entities", "no reference statements"}
"""What a metric says when the judge lists no claim or entity to check (the answer or the
reference makes none, or a small model finds none): reachable since the lists may be empty."""
TYPED_ERRORS = {
    "timeout",
    "rate_limited",
    "server_error",
    "connection_error",
    "bad_request",
    "truncated",
    "empty_response",
    "refusal",
    "invalid_json",
    "schema_mismatch",
    "out_of_range",
}


def _sample(trace_id: str, question: str, answer: str, reference: str, *ctx: str) -> Sample:
    return Sample(
        trace_id=trace_id,
        question=question,
        answer=answer,
        reference=reference,
        contexts=tuple(Context(id=f"{trace_id}-{i}", text=t) for i, t in enumerate(ctx)),
    )


SAMPLES = [
    _sample(
        "en-paris",
        "What is the capital of France?",
        "The capital of France is Paris.",
        "Paris is the capital of France.",
        "Paris is the capital and largest city of France.",
        "Berlin is the capital of Germany.",
    ),
    _sample(
        "ru-volga",
        "Какая река самая длинная в Европе?",
        "Самая длинная река Европы — Волга.",
        "Волга — самая длинная река в Европе.",
        "Волга — самая длинная река Европы, её длина 3530 километров.",
        "Москва — столица России.",
    ),
]


def judge_metrics() -> list[str]:
    known_names()  # loads every metric module
    return sorted(name for name, spec in FAMILIES.items() if spec.uses_judge)


def test_every_judge_metric_on_smollm2(
    llama_server: str, embedder: object, caplog: pytest.LogCaptureFixture
) -> None:
    judge = JudgeClient(
        JudgeConfig(
            models=(MODEL,),
            api_base=llama_server,
            api_key="none",
            temperature=0.0,
            max_concurrency=4,
            timeout_s=180.0,
            max_retries=2,
            max_tokens=400,
        )
    )
    metrics = judge_metrics()
    assert len(metrics) >= 10

    async def run_all() -> dict[str, list[Outcome]]:
        out: dict[str, list[Outcome]] = {}
        for metric in metrics:
            started = time.perf_counter()
            out[metric] = await ascore(metric, SAMPLES, judge, embedder=embedder)
            print(f"{metric}: {time.perf_counter() - started:.1f} s {out[metric]}")
        return out

    started = time.perf_counter()
    with caplog.at_level(logging.WARNING):
        results = asyncio.run(run_all())
    print(f"all metrics: {time.perf_counter() - started:.1f} s, {judge.stats.as_dict()}")

    scored = 0
    for metric, outcomes in results.items():
        values = answered = 0
        for sample, outcome in zip(SAMPLES, outcomes, strict=True):
            where = f"{metric} on {sample.trace_id}: {outcome!r}"
            if isinstance(outcome, JudgeScore):
                assert math.isfinite(outcome.value) and 0.0 <= outcome.value <= 1.0, where
                values += 1
            elif isinstance(outcome, Skipped):
                # the judge found nothing to check (an empty claims or entities list is
                # allowed since a refusal must not be given invented claims, issue 29):
                # a documented outcome, not an error
                assert outcome.reason in NOTHING_FOUND, where
                answered += 1
            else:
                assert isinstance(outcome, Failed), where
                assert outcome.error_type in TYPED_ERRORS, where
        # the model's reply was parsed and used for at least half the samples: a score, or
        # an empty list (SmolLM2 at the judge's temperature sometimes lists no entity of
        # "The capital of France is Paris.")
        answered += values
        assert answered * 2 >= len(SAMPLES), f"{metric}: only {answered} answers: {outcomes}"
        scored += values
    # ... and most of what it answered are scores, not empty lists
    assert scored * 2 >= len(results) * len(SAMPLES), f"only {scored} scores"

    # The server refused json_schema once; every later request used its grammar form.
    assert judge.structured_output_modes() == {MODEL: "json_object_schema"}
    assert judge.structured_output_fallbacks == {(MODEL, "json_schema", "json_object_schema"): 1}
    # A local model has no price: cost 0, no error logged about it.
    assert judge.stats.cost_usd == 0.0
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
