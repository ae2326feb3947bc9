"""Every metric declares which way is better, its unit and range: the dashboards' colours
and the drift/drop alert rules are generated from these facts (dashboards/build.py)."""

from __future__ import annotations

import pytest

from evaluators.errors import UnknownMetricError
from evaluators.registry import (
    FAMILIES,
    JOB_METRICS,
    UNIT_RANGES,
    JobMetric,
    declare,
    declared,
    describe,
)


def test_every_metric_declares_direction_unit_and_range() -> None:
    undeclared = [
        name
        for name, spec in declared().items()
        if spec.direction not in ("higher", "lower", "none")
    ]
    assert undeclared == [], (
        "declare direction= ('higher', 'lower' or 'none') for these metrics: "
        "their drift rules and panel colours are generated from it"
    )
    for name, spec in declared().items():
        assert spec.unit in UNIT_RANGES, name
        low, high = spec.value_range
        assert low is not None and (high is None or low < high), name
    assert set(FAMILIES).isdisjoint(JOB_METRICS)


@pytest.mark.parametrize(
    ("name", "direction", "unit"),
    [
        ("hit_rate@1", "higher", "ratio"),
        ("ndcg@10", "higher", "score"),
        ("mrr", "higher", "score"),
        ("noise_sensitivity_relevant", "lower", "ratio"),
        ("noise_sensitivity_irrelevant", "lower", "ratio"),
        ("retrieval_empty_rate", "lower", "ratio"),
        ("judge_latency_ms", "lower", "ms"),
        ("judge_error_rate", "lower", "ratio"),
        ("judge_latency_ms_avg", "lower", "ms"),
        ("judge_consistency", "higher", "ratio"),
        ("n_clusters", "none", "count"),
        ("total_pairs", "none", "count"),
        ("bleu", "higher", "bleu"),
        ("silhouette", "higher", "cosine"),
    ],
)
def test_directions_follow_the_seeds(name: str, direction: str, unit: str) -> None:
    spec = describe(name)
    assert (spec.direction, spec.unit) == (direction, unit)


def test_describe_rejects_unknown_names_and_declare_duplicates() -> None:
    with pytest.raises(UnknownMetricError, match="unknown metric"):
        describe("hit_rat@1")
    with pytest.raises(ValueError, match="declared twice"):
        declare(JobMetric("judge_error_rate", "again", direction="lower"))
    with pytest.raises(ValueError, match="declared twice"):
        declare(JobMetric("mrr", "clash with a family", direction="higher"))
    assert describe("bleu").value_range == (0.0, 100.0)
    assert describe("judge_latency_ms_avg").value_range == (0.0, None)
