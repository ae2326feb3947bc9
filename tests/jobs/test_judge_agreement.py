"""judge_agreement: live judge/human agreement and PPI-corrected means, on real databases."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score
from sqlalchemy import select

from collector.jobs.catalog.judge_agreement import combine_labels
from collector.jobs.scheduler import build_runner
from collector.settings import load_settings
from collector.store.models import HumanLabel, JobOutcome, Judgment, MetricResult
from collector.store.session import make_engine, make_session_factory
from evaluators.correction import Corrected, ppi_mean
from evaluators.labels import LABEL_SCALES
from exporters.prometheus import QualityCollector
from exporters.quality import ResultsCache
from ragpulse.job_setup import job_environment

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def _seed(factory: Any) -> dict[str, Any]:
    """60 traces: 40 in the last hour, 20 three days ago; every other one labelled."""
    rng = np.random.default_rng(7)
    truth: dict[str, Any] = {"e2e": {}, "cr": {}, "e2e_label": {}, "cr_label": {}, "model": {}}
    with factory() as session:
        for i in range(60):
            trace = f"t{i:02d}"
            ts = NOW - (timedelta(minutes=1 + i) if i < 40 else timedelta(days=3, minutes=i))
            grade = 0 if i == 0 else int(rng.integers(0, 3))  # t00: labelled 0 and 1
            judge_grade = grade if rng.random() < 0.7 else int(rng.integers(0, 3))
            e2e_h = float(rng.random())
            e2e_j = float(np.clip(e2e_h + 0.15 + rng.normal(0, 0.1), 0, 1))
            outcomes: dict[str, Any] = {"e2e_score": e2e_j, "context_relevance": judge_grade / 2}
            if i == 5:
                outcomes["e2e_score"] = {"error": "Timeout"}  # not scored, not paired
            session.add(
                JobOutcome(
                    job="rag_quality",
                    trace_id=trace,
                    trace_updated_at=ts,
                    ts=ts,
                    groups=None,
                    outcomes=outcomes,
                )
            )
            truth["e2e"][trace] = outcomes["e2e_score"]
            truth["cr"][trace] = judge_grade / 2
            model = "judge-a" if i % 4 in (0, 1) else "judge-b"
            truth["model"][trace] = model
            session.add(
                Judgment(
                    cache_key=f"k{i}",
                    metric="context_relevance",
                    model=model,
                    prompt_version="v1",
                    input_hash="h",
                    temperature=0.0,
                    trace_id=trace,
                    status="ok",
                    created_at=ts,
                )
            )
            if i % 2:
                continue
            session.add(
                HumanLabel(
                    trace_id=trace, metric="e2e_score", labeler="", value=e2e_h, timestamp=ts
                )
            )
            session.add(
                HumanLabel(
                    trace_id=trace,
                    metric="context_relevance",
                    labeler="a",
                    value=grade,
                    timestamp=ts,
                )
            )
            truth["e2e_label"][trace] = e2e_h
            truth["cr_label"][trace] = float(grade)
            if i == 0:  # a second labeler one grade up: the tie goes to the lower grade
                session.add(
                    HumanLabel(
                        trace_id=trace,
                        metric="context_relevance",
                        labeler="b",
                        value=grade + 1,
                        timestamp=ts,
                    )
                )
        session.add(  # a label of a trace outside every window counts nowhere
            HumanLabel(trace_id="old", metric="e2e_score", labeler="", value=0.0, timestamp=NOW)
        )
        session.commit()
    return truth


def _rows(factory: Any, window: str) -> dict[tuple[str, str], MetricResult]:
    with factory() as session:
        rows = session.scalars(select(MetricResult).where(MetricResult.window == window)).all()
    return {(r.metric, r.group_key): r for r in rows}


def test_agreement_and_corrected_mean_per_window_and_model(db_url: str) -> None:
    settings = load_settings(scheduler={"jobs": ["judge_agreement"]}, judge={"min_agreement": 0.5})
    engine = make_engine(db_url)
    factory = make_session_factory(engine)
    truth = _seed(factory)
    runner = build_runner(settings, engine, job_environment(settings, engine))
    report = runner.jobs["judge_agreement"].run(NOW)
    assert report.status == "ok"

    for window, traces in (("1h", [f"t{i:02d}" for i in range(40)]), ("7d", sorted(truth["cr"]))):
        rows = _rows(factory, f"agreement:{window}")
        for model in ("judge-a", "judge-b"):
            own = [t for t in traces if t in truth["cr_label"] and truth["model"][t] == model]
            judge = [round(truth["cr"][t] * 2) for t in own]
            human = [truth["cr_label"][t] for t in own]
            row = rows[("context_relevance", f"{model}|weighted_kappa")]
            expected = cohen_kappa_score(judge, human, weights="quadratic")
            assert row.value == pytest.approx(expected)
            assert row.n == len(own)
            assert row.group_labels == {"model": model, "stat": "weighted_kappa"}
            assert row.ci_lower is not None and row.ci_lower <= row.value <= row.ci_upper
        # no judgments for e2e_score: the configured models, here none -> "unknown"
        scored = [t for t in traces if isinstance(truth["e2e"][t], float)]
        labelled = [t for t in scored if t in truth["e2e_label"]]
        row = rows[("e2e_score", "unknown|spearman")]
        expected_rho = spearmanr(
            [truth["e2e"][t] for t in labelled], [truth["e2e_label"][t] for t in labelled]
        )
        assert row.value == pytest.approx(float(expected_rho.statistic))
        assert row.n == len(labelled)
        corrected = _rows(factory, f"corrected:{window}")[("e2e_score", "")]
        ppi = ppi_mean(
            [truth["e2e"][t] for t in scored],
            [truth["e2e"][t] for t in labelled],
            [truth["e2e_label"][t] for t in labelled],
            bounds=(0.0, 1.0),
        )
        assert isinstance(ppi, Corrected)
        assert (corrected.value, corrected.ci_lower, corrected.ci_upper, corrected.n) == (
            pytest.approx(ppi.value),
            pytest.approx(ppi.ci_lower),
            pytest.approx(ppi.ci_upper),
            len(labelled),
        )
        # the judge reads 0.15 high; the correction pulls the mean back below the raw one
        assert corrected.value < float(np.mean([truth["e2e"][t] for t in scored]))
    n_1h = _rows(factory, "agreement:1h")[("e2e_score", "unknown|spearman")].n
    assert n_1h < _rows(factory, "agreement:7d")[("e2e_score", "unknown|spearman")].n
    threshold = _rows(factory, "agreement:min")[("", "")]
    assert (threshold.value, threshold.n) == (0.5, 30)


def test_several_labelers_combine_by_scale() -> None:
    ordinal = LABEL_SCALES["context_relevance"]
    assert combine_labels([1.0, 2.0], ordinal) == 1.0  # a tie: the lower grade
    assert combine_labels([2.0, 0.0, 2.0], ordinal) == 2.0  # the majority
    assert combine_labels([0.2, 0.6], LABEL_SCALES["e2e_score"]) == pytest.approx(0.4)


def test_without_labels_only_the_threshold_row_and_undefined_corrections(sqlite_url: str) -> None:
    settings = load_settings(scheduler={"jobs": ["judge_agreement"]})
    engine = make_engine(sqlite_url)
    factory = make_session_factory(engine)
    with factory() as session:
        for i in range(3):
            session.add(
                JobOutcome(
                    job="rag_quality",
                    trace_id=f"u{i}",
                    trace_updated_at=NOW,
                    ts=NOW - timedelta(minutes=5),
                    outcomes={"e2e_score": 0.5},
                )
            )
        session.commit()
    runner = build_runner(settings, engine, job_environment(settings, engine))
    runner.jobs["judge_agreement"].run(NOW)
    assert _rows(factory, "agreement:24h") == {}
    corrected = _rows(factory, "corrected:24h")[("e2e_score", "")]
    assert corrected.value is None and corrected.n == 0
    assert corrected.skip_reasons == {"fewer than 2 labelled traces": 0}


def test_exported_series_from_a_fresh_registry(sqlite_url: str) -> None:
    """The published points become the agreement and corrected families (and nothing of
    them leaks into `ragpulse_metric_value`); undefined statistics have no series."""
    settings = load_settings(scheduler={"jobs": ["judge_agreement"]})
    engine = make_engine(sqlite_url)
    factory = make_session_factory(engine)
    truth = _seed(factory)
    with factory() as session:  # one labelled pair in the 1h window of faithfulness
        session.add(
            HumanLabel(trace_id="t00", metric="faithfulness", labeler="", value=1.0, timestamp=NOW)
        )
        outcome = session.scalars(select(JobOutcome).where(JobOutcome.trace_id == "t00")).one()
        outcome.outcomes = {**outcome.outcomes, "faithfulness": 0.5}
        session.commit()
    cache = ResultsCache()
    env = job_environment(settings, engine, results=cache)
    job = build_runner(settings, engine, env).jobs["judge_agreement"]
    job.run(NOW)
    job.publish()
    registry = CollectorRegistry()
    registry.register(QualityCollector(cache))
    get = registry.get_sample_value
    row = _rows(factory, "agreement:7d")[("context_relevance", "judge-a|weighted_kappa")]
    labels = {"metric": "context_relevance", "model": "judge-a", "window": "7d"}
    assert get("ragpulse_judge_agreement", {**labels, "stat": "weighted_kappa"}) == row.value
    assert get("ragpulse_judge_agreement_ci_lower", {**labels, "stat": "weighted_kappa"}) == (
        row.ci_lower
    )
    assert get("ragpulse_judge_agreement_n", {**labels, "stat": "weighted_kappa"}) == row.n
    corrected = _rows(factory, "corrected:24h")[("e2e_score", "")]
    e2e = {"metric": "e2e_score", "window": "24h"}
    assert get("ragpulse_metric_corrected", e2e) == corrected.value
    assert get("ragpulse_metric_corrected_ci_upper", e2e) == corrected.ci_upper
    assert get("ragpulse_metric_corrected_labelled", e2e) == len(
        [t for t in truth["e2e_label"] if int(t[1:]) < 40]  # the 24h traces
    )
    # one pair: every statistic undefined -> n only, no value, no NaN anywhere
    faith = {"metric": "faithfulness", "model": "unknown", "stat": "spearman", "window": "1h"}
    assert get("ragpulse_judge_agreement_n", faith) == 1
    assert get("ragpulse_judge_agreement", faith) is None
    assert get("ragpulse_metric_corrected", {"metric": "faithfulness", "window": "1h"}) is None
    assert get("ragpulse_judge_agreement_min", {}) == 0.4
    assert get("ragpulse_judge_agreement_min_pairs", {}) == 30
    exported = generate_latest(registry).decode()
    assert "NaN" not in exported
    assert 'ragpulse_metric_value{metric="e2e_score"' not in exported
    # a stand-alone exporter reloading metric_results serves the very same series
    reloaded = ResultsCache()
    with factory() as session:
        reloaded.load_latest(session)
    again = CollectorRegistry()
    again.register(QualityCollector(reloaded))
    assert sorted(generate_latest(again).decode().splitlines()) == sorted(exported.splitlines())


def test_each_slo_classification_against_the_labels(db_url: str) -> None:
    """An SLO on e2e_score (>= 0.5): its good/bad classification of the judge's scores
    against the labels' (positive = bad), as `slo:NAME:*` stats and series; the agreement
    alert's anchored stat regex does not read them."""
    from sklearn.metrics import recall_score

    settings = load_settings(
        scheduler={"jobs": ["judge_agreement"]},
        slo={
            "objectives": [
                {"name": "e2e-ok", "metric": "e2e_score", "threshold": 0.5, "target": 0.9}
            ]
        },
    )
    engine = make_engine(db_url)
    factory = make_session_factory(engine)
    truth = _seed(factory)
    cache = ResultsCache()
    job = build_runner(settings, engine, job_environment(settings, engine, results=cache)).jobs[
        "judge_agreement"
    ]
    assert job.run(NOW).status == "ok"
    job.publish()
    traces = [f"t{i:02d}" for i in range(40)]
    labelled = [t for t in traces if isinstance(truth["e2e"][t], float) and t in truth["e2e_label"]]
    bad_j = [int(truth["e2e"][t] < 0.5) for t in labelled]
    bad_h = [int(truth["e2e_label"][t] < 0.5) for t in labelled]
    rows = _rows(factory, "agreement:1h")
    for stat, expected, n in (
        ("cohen_kappa", cohen_kappa_score(bad_h, bad_j), len(labelled)),
        ("sensitivity", recall_score(bad_h, bad_j), sum(bad_h)),
        ("specificity", recall_score(bad_h, bad_j, pos_label=0), len(labelled) - sum(bad_h)),
    ):
        row = rows[("e2e_score", f"unknown|slo:e2e-ok:{stat}")]
        assert row.value == pytest.approx(expected)
        assert row.n == n
        lo, value, hi = row.ci_lower, row.value, row.ci_upper
        assert lo is not None and value is not None and hi is not None
        assert lo <= value <= hi
    registry = CollectorRegistry()
    registry.register(QualityCollector(cache))
    labels = {"metric": "e2e_score", "model": "unknown", "window": "1h"}
    value = registry.get_sample_value(
        "ragpulse_judge_agreement", {**labels, "stat": "slo:e2e-ok:cohen_kappa"}
    )
    assert value == rows[("e2e_score", "unknown|slo:e2e-ok:cohen_kappa")].value
    # no SLO on context_relevance: none of its stats
    assert not any(k[0] == "context_relevance" and "slo:" in k[1] for k in rows)
