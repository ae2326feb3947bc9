"""The shipped dashboards and quality rules are generated from the registry, and complete:
every metric a scheduled job produces has a panel, colours follow the seeds' bands and the
metric's direction, and the drift rules read each metric's direction."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from collector.jobs.scheduler import definitions
from collector.settings import load_settings
from dashboards import build, metrics_view, quality_rules
from dashboards.panels import versions
from evaluators.registry import FAMILIES, MetricSpec, describe

ROOT = Path(__file__).resolve().parents[2]
OVERVIEW = ROOT / "dashboards" / "grafana" / "dashboards" / "overview.json"
CONVERSATIONS = OVERVIEW.with_name("conversations.json")
"""The sessions job's metrics have their own board (the overview is at its ConfigMap limit)."""
QUALITY = ROOT / "dashboards" / "prometheus" / "rules" / "quality.yml"


def test_committed_files_are_the_generated_ones() -> None:
    stale = [
        str(path.relative_to(ROOT))
        for path, text in build.generated().items()
        if path.read_text(encoding="utf-8") != text
    ]
    assert stale == [], "run `python dashboards/build.py` and commit the result"


def _scheduled_metrics() -> set[str]:
    return {m for d in definitions(load_settings()).values() for m in d.metrics}


def _panels(*boards: Path) -> list[dict[str, Any]]:
    return [
        p
        for board in boards or (OVERVIEW,)
        for p in json.loads(board.read_text())["panels"]
        if p["type"] != "row"
    ]


def _metrics_of(panel: dict[str, Any]) -> set[str]:
    return {m for t in panel["targets"] for m in re.findall(r'metric="([^"]+)"', t["expr"])}


def test_every_metric_the_scheduled_jobs_produce_has_a_panel() -> None:
    produced = _scheduled_metrics()
    # the ones issue 9 found missing, and the Tier 1 list of seed 004 §4.3
    assert {
        "context_precision",
        "context_recall",
        "context_entity_recall",
        "noise_sensitivity_relevant",
        "noise_sensitivity_irrelevant",
        "response_relevancy",
        "bleu",
        "rouge1_f",
        "rouge2_f",
        "judge_error_rate",
        "hit_rate@10",
        "ndcg@5",
        "retrieval_empty_rate",
        *(f"{m}@{k}" for m in ("recall", "precision") for k in (1, 3, 5, 10)),
    } <= produced
    timeseries = [  # one per metric (the alerting row draws the detectors, the versions
        # row the guarded metrics per version, the conversations board's last row the
        # resolution rate per tenant)
        p
        for p in _panels(OVERVIEW, CONVERSATIONS)
        if p["type"] == "timeseries"
        and "ragpulse_metric_" in p["targets"][0]["expr"]
        and versions.SELECTOR not in p["targets"][0]["expr"]
        and 'tenant!=""' not in p["targets"][0]["expr"]
    ]
    drawn = set().union(*(_metrics_of(p) for p in timeseries))
    assert sorted(produced - drawn) == []
    percentiles = {q for m in produced for q in metrics_view.quantiles_of(m)}
    assert percentiles >= {"latency_ms_p50", "latency_ms_p95", "latency_ms_p99"}
    assert sorted(percentiles - drawn) == []
    for panel in timeseries:
        metrics = _metrics_of(panel)
        bases = {getattr(describe(m), "quantile_of", None) for m in metrics}
        if bases != {None}:  # a metric's percentiles (1h) and its 7-day p95, n
            (base,) = bases
            assert metrics == set(metrics_view.quantiles_of(str(base)))
            assert {t["refId"] for t in panel["targets"]} == {"A", "B", "C", "D", "E"}
            assert "Lower" in panel["description"], base
            continue
        (metric,) = metrics
        spec = describe(metric)
        refs = {t["refId"] for t in panel["targets"]}
        assert refs == ({"A", "B", "C", "D", "E"} if spec.interval else {"A", "D", "E"}), metric
        assert {"higher": "Higher", "lower": "Lower", "none": "neither"}[
            str(spec.direction)
        ] in panel["description"], metric


def _colour(steps: list[dict[str, Any]], value: float) -> str:
    """Grafana's rule: the last step whose value is <= the value (the first is -inf)."""
    colour = steps[0]["color"]
    for step in steps[1:]:
        if value >= step["value"]:
            colour = step["color"]
    return str(colour)


def _steps(metric: str, kind: str = "stat") -> list[dict[str, Any]]:
    for panel in _panels():
        if panel["type"] == kind and _metrics_of(panel) == {metric}:
            return list(panel["fieldConfig"]["defaults"]["thresholds"]["steps"])
    raise AssertionError(f"no {kind} panel for {metric}")


@pytest.mark.parametrize(
    ("metric", "attention", "excellent"),
    [
        ("hit_rate@1", 0.5, 0.8),
        ("mrr", 0.5, 0.8),
        ("ndcg@10", 0.5, 0.8),
        ("faithfulness_rating", 0.7, 0.9),
        ("e2e_score", 0.6, 0.8),
        ("judge_accuracy", 0.85, 0.95),
        ("judge_consistency", 0.85, 0.95),
    ],
)
def test_seed_004_bands_with_a_strict_excellent(
    metric: str, attention: float, excellent: float
) -> None:
    for kind in ("stat", "timeseries"):
        steps = _steps(metric, kind)
        above = math.nextafter(excellent, math.inf)
        assert _colour(steps, excellent) == "yellow"  # "good: 0.5–0.8" includes 0.8
        assert _colour(steps, above) == "green"  # "excellent: > 0.8"
        assert _colour(steps, attention) == "yellow"
        assert _colour(steps, math.nextafter(attention, -math.inf)) == "red"
        assert _colour(steps, 1.0) == "green" and _colour(steps, 0.0) == "red"


def test_seed_000_bands_for_context_relevance() -> None:
    steps = _steps("context_relevance")
    expected = {0.0: "red", 0.49: "red", 0.5: "orange", 0.69: "orange", 0.7: "yellow"}
    expected |= {0.89: "yellow", 0.9: "green", 1.0: "green"}
    assert {v: _colour(steps, v) for v in expected} == expected


def test_seed_002_bands() -> None:
    steps = _steps("faithfulness", "timeseries")
    expected = {0.1: "dark-red", 0.3: "red", 0.5: "orange", 0.7: "yellow", 0.95: "green"}
    assert {v: _colour(steps, v) for v in expected} == expected
    # context precision's own bounds (seed 002: 0.8–1.0 excellent … 0.0–0.2 very poor)
    precision = _steps("context_precision", "timeseries")
    expected = {0.1: "dark-red", 0.2: "red", 0.4: "orange", 0.6: "yellow", 0.8: "green"}
    assert {v: _colour(precision, v) for v in expected} == expected
    noise = _steps("noise_sensitivity_irrelevant", "timeseries")
    expected = {0.05: "green", 0.2: "yellow", 0.4: "orange", 0.6: "red", 0.9: "dark-red"}
    assert {v: _colour(noise, v) for v in expected} == expected


def test_lower_is_better_colours_run_the_other_way() -> None:
    steps = _steps("retrieval_empty_rate")
    assert [_colour(steps, v) for v in (0.0, 0.05, 0.051, 1.0)] == ["green"] * 2 + ["red"] * 2
    # a band table whose colours contradict the direction is refused
    saved = metrics_view.BANDS["noise_sensitivity_relevant"]
    metrics_view.BANDS["noise_sensitivity_relevant"] = metrics_view.BANDS["faithfulness"]
    try:
        with pytest.raises(ValueError, match="lower is better"):
            metrics_view.check_bands()
    finally:
        metrics_view.BANDS["noise_sensitivity_relevant"] = saved


def _drift_rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(QUALITY.read_text())["groups"]
    return [r for g in groups if g["name"] == "ragpulse-quality-drift" for r in g["rules"]]


def _matching(metric: str) -> list[tuple[str, str, str, str]]:
    """(alert, severity, tier, kind) of every drift rule whose metric regex matches."""
    out = []
    for rule in _drift_rules():
        found = re.search(r'metric=~"([^"]+)"', rule["expr"])
        assert found is not None, rule["alert"]
        if re.fullmatch(found.group(1), metric):
            kind = "detector" if "ragpulse_drift_score" in rule["expr"] else "window"
            out.append((rule["alert"], rule["labels"]["severity"], rule["labels"]["tier"], kind))
    return sorted(out)


def test_drift_rules_follow_each_metrics_direction_and_kind() -> None:
    """A metric scored per trace (or a job metric stored per trace) gets the paging and the
    ticket detector rule of its tier;
    one computed over a set of traces gets the window ticket rule of its direction;
    one without a direction gets none."""
    for metric in sorted(_scheduled_metrics() | {"hit_rate@7", "mrr@3", "precision@2"}):
        spec = describe(metric)
        matches = _matching(metric)
        if spec.direction == "none":
            assert matches == [], metric
            continue
        tiers = {tier for _, _, tier, _ in matches}
        assert len(tiers) == 1, (metric, matches)
        if getattr(spec, "kind", "dataset") != "dataset" or getattr(spec, "per_trace", False):
            assert [(a, s, k) for a, s, _, k in matches] == [
                ("RagpulseQualityDriftTicket", "warning", "detector"),
                ("RagpulseQualityDropPage", "critical", "detector"),
            ], metric
        else:
            assert [(a, s, k) for a, s, _, k in matches] == [
                ("RagpulseQualityDriftTicket", "warning", "window")
            ], metric
    assert _matching("hit_rate@")[:1] == []
    assert {t for _, _, t, _ in _matching("hit_rate@1")} == {"retrieval"}
    assert {t for _, _, t, _ in _matching("faithfulness")} == {"generation"}


def test_window_drift_rules_read_the_direction() -> None:
    for rule in _drift_rules():
        if "ragpulse_drift_score" in rule["expr"]:
            continue
        found = re.search(r'metric=~"([^"]+)"', rule["expr"])
        assert found is not None
        metric = found.group(1).split("|")[0]
        higher_first = rule["expr"].index('window="7d"') < rule["expr"].index('window="24h"')
        assert higher_first == (describe(metric).direction == "higher"), metric


def test_a_metric_without_a_direction_gets_no_rule_and_is_reported() -> None:
    spec = FAMILIES["bleu"]
    FAMILIES["undirected_test_metric"] = MetricSpec(
        family="undirected_test_metric",
        kind="per_sample",
        compute=spec.compute,
        needs="-",
        description="a metric that forgot its direction",
    )
    try:
        assert metrics_view.undirected() == ["undirected_test_metric"]
        for direction in ("higher", "lower", "none"):
            assert "undirected_test_metric" not in quality_rules.metric_pattern(direction)
    finally:
        del FAMILIES["undirected_test_metric"]


def test_the_metrics_page_has_the_seed_004_goal_table() -> None:
    readme = (ROOT / "docs" / "concepts" / "metrics.md").read_text(encoding="utf-8")
    for goal, metrics in metrics_view.GOALS:
        row = f"| {goal} | {', '.join(f'`{m}`' for m in metrics)} |"
        assert row in readme, row


def test_overview_panels_do_not_overlap() -> None:
    taken: dict[tuple[int, int], str] = {}
    board = json.loads(OVERVIEW.read_text())
    for panel in board["panels"]:
        grid = panel["gridPos"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in taken, (panel["title"], taken.get((x, y)))
                taken[(x, y)] = panel["title"]
        assert grid["x"] + grid["w"] <= 24


def test_the_versions_row_draws_the_guarded_metrics_per_version() -> None:
    """Every metric an alert guards (computed per group) has a per-version panel with its
    interval, the table has its 24h value, CI and n per version, and every other quality
    panel reads the overall or a tenant's series only (version empty)."""
    board = json.loads(OVERVIEW.read_text())
    names = [v["name"] for v in board["templating"]["list"]]
    assert names == ["datasource", "tenant", "version"]
    guarded = versions.guarded()
    assert {"hit_rate@1", "mrr", "ndcg@10", "faithfulness", "e2e_score"} <= set(guarded)
    assert "judge_consistency" not in guarded  # computed overall only
    per_version = [p for p in _panels() if versions.SELECTOR in p["targets"][0]["expr"]]
    lines = {next(iter(_metrics_of(p))): p for p in per_version if p["type"] == "timeseries"}
    assert sorted(lines) == sorted(guarded)
    for metric, panel in lines.items():
        families = [t["expr"].split("{")[0] for t in panel["targets"]]
        expected = ["ragpulse_metric_value"]
        if describe(metric).interval:
            expected += ["ragpulse_metric_ci_lower", "ragpulse_metric_ci_upper"]
        assert families == expected, metric
        assert all('window="1h"' in t["expr"] for t in panel["targets"])
    (table,) = [p for p in per_version if p["type"] == "table"]
    assert [t["expr"].split("{")[0] for t in table["targets"]] == [
        "ragpulse_metric_value",
        "ragpulse_metric_ci_lower",
        "ragpulse_metric_ci_upper",
        "ragpulse_metric_samples",
    ]
    assert all(t["instant"] and 'window="24h"' in t["expr"] for t in table["targets"])
    others = [
        t["expr"]
        for p in _panels()
        if p not in per_version
        for t in p["targets"]
        if "ragpulse_metric_" in t["expr"]
    ]
    assert others and all('version=""' in e for e in others)
