"""The runner: name resolution, sync + async metrics, progress, grouping, failures."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pytest

from evaluators import registry
from evaluators.errors import UnknownMetricError
from evaluators.outcome import Failed, Outcome, Score, Skipped
from evaluators.progress import ProgressEvent
from evaluators.registry import DatasetValue, EvalContext, MetricSpec
from evaluators.runner import NO_GROUP, aevaluate, evaluate
from evaluators.sample import JudgeDecision, Sample


@dataclass
class Stats:
    calls: int = 0
    cache_hits: int = 0
    errors: int = 0
    cost_usd: float = 0.0


class FakeJudge:
    """Stands in for the paid LLM judge: counts calls and exposes `stats`."""

    model_name = "fake-judge"

    def __init__(self) -> None:
        self.stats = Stats()


async def _async_len(samples: Sequence[Sample], ctx: EvalContext, k: int | None) -> list[Outcome]:
    await asyncio.sleep(0)
    if ctx.judge is None:
        return [Skipped("no judge configured")] * len(samples)
    ctx.judge.stats.calls += len(samples)
    return [Score(float(len(s.question))) for s in samples]


def _boom(samples: Sequence[Sample], ctx: EvalContext, k: int | None) -> list[Outcome]:
    raise RuntimeError("bad metric")


def _count(samples: Sequence[Sample], ctx: EvalContext, k: int | None) -> DatasetValue:
    return DatasetValue(float(len(samples)), len(samples))


@pytest.fixture
def test_metrics() -> Iterator[None]:
    specs = [
        MetricSpec(
            "t_async_len", "async_per_sample", _async_len, "question", "test", uses_judge=True
        ),
        MetricSpec("t_boom", "per_sample", _boom, "nothing", "test"),
        MetricSpec("t_count", "dataset", _count, "nothing", "test"),
    ]
    for spec in specs:
        registry.register(spec)
    yield
    for spec in specs:
        del registry.FAMILIES[spec.family]


def _samples(n: int) -> list[Sample]:
    return [
        Sample(
            f"t{i}",
            "q" * (i % 3 + 1),
            tags={"tenant": "a" if i % 2 else "b"} if i else {},
            judge=JudgeDecision(decision=bool(i % 2), latency_ms=10.0 * i),
            judge_label=bool(i % 3),
        )
        for i in range(n)
    ]


def test_unknown_metric_lists_the_known_ones() -> None:
    with pytest.raises(UnknownMetricError) as err:
        evaluate(_samples(2), ["judge_accuracy", "no_such_metric"], EvalContext())
    assert "no_such_metric" in str(err.value) and "judge_f1" in str(err.value)


def test_sync_and_async_metrics_with_progress_and_judge_counters(test_metrics: None) -> None:
    events: list[ProgressEvent] = []
    judge = FakeJudge()
    samples = _samples(70)
    result = evaluate(
        samples,
        ["t_async_len", "judge_latency_ms", "t_count"],
        EvalContext(judge=judge),
        progress=events.append,
    )
    agg = result.aggregates["t_async_len"]
    assert agg.n == 70 and agg.value == pytest.approx(sum(len(s.question) for s in samples) / 70)
    assert agg.signature.judge_model == "fake-judge"
    assert result.aggregates["t_count"].value == 70
    assert len(result.per_sample["t_async_len"]) == 70 and "t_count" not in result.per_sample
    final = [e for e in events if e.metric == "t_async_len" and e.finished]
    assert final and final[-1].counters["calls"] == 70
    assert {e.done for e in events if e.metric == "t_async_len"} >= {0, 70}
    assert len([e for e in events if e.metric == "t_async_len"]) >= 4  # chunked: 32+32+6


def test_judge_metric_without_a_judge_is_skipped(test_metrics: None) -> None:
    agg = evaluate(_samples(3), ["t_async_len"], EvalContext()).aggregates["t_async_len"]
    assert agg.value is None and dict(agg.skip_reasons) == {"no judge configured": 3}


def test_a_failing_metric_becomes_errors_not_a_crash(test_metrics: None) -> None:
    agg = evaluate(_samples(4), ["t_boom", "judge_latency_ms"], EvalContext()).aggregates
    assert agg["t_boom"].errors == 4 and dict(agg["t_boom"].error_types) == {"RuntimeError": 4}
    assert agg["judge_latency_ms"].n == 4


def test_group_by_tag(test_metrics: None) -> None:
    samples = _samples(9)
    result = evaluate(
        samples, ["judge_latency_ms", "t_count", "judge_accuracy"], EvalContext(), group_by="tenant"
    )
    assert set(result.groups) == {"a", "b", NO_GROUP}
    a = [s for s in samples if s.tags.get("tenant") == "a"]
    assert result.groups["a"]["t_count"].value == len(a)
    assert result.groups["a"]["judge_latency_ms"].value == pytest.approx(
        sum(s.judge.latency_ms for s in a if s.judge and s.judge.latency_ms is not None) / len(a)
    )
    assert result.groups[NO_GROUP]["t_count"].value == 1
    assert result.aggregates["t_count"].value == 9


def test_aevaluate_matches_evaluate(test_metrics: None) -> None:
    samples = _samples(40)
    names = ["t_async_len", "judge_f1", "judge_latency_ms"]
    sync = evaluate(samples, names, EvalContext(judge=FakeJudge(), seed=3))
    asynchronous = asyncio.run(aevaluate(samples, names, EvalContext(judge=FakeJudge(), seed=3)))
    assert sync.aggregates == asynchronous.aggregates
    assert all(isinstance(o, Score) for o in asynchronous.per_sample["t_async_len"])
    assert not any(isinstance(o, Failed) for o in sync.per_sample["judge_latency_ms"])
