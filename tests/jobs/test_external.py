"""The `external` job: the application's own evaluation results as `external:<name>`
series, per window and group, with the number of names bounded."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, select, update

from collector.jobs.definition import JobEnvironment
from collector.jobs.external import ExternalJob, definition, metric_name
from collector.jobs.scheduler import JOB_NAMES
from collector.jobs.windows import parse_windows
from collector.settings import load_settings
from collector.store.models import MetricResult, Trace
from collector.store.session import make_engine, make_session_factory
from exporters.prometheus import QualityCollector
from exporters.quality import ResultsCache
from tests.jobs.helpers import add_trace

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    eng = make_engine(db_url)
    yield eng
    eng.dispose()


def _env(engine: Engine, results: ResultsCache | None = None) -> JobEnvironment:
    return JobEnvironment(
        session_factory=make_session_factory(engine),
        windows=parse_windows(["1h", "24h"]),
        group_labels=["tenant"],
        results=results,
    )


def _result(score: float | None, error: str | None = None) -> dict[str, Any]:
    return {"score": score, "label": None, "explanation": None, "error_type": error}


def _latest(engine: Engine, metric: str, window: str, group: str = "") -> MetricResult | None:
    with make_session_factory(engine)() as session:
        return session.scalars(
            select(MetricResult)
            .where(
                MetricResult.metric == metric,
                MetricResult.window == window,
                MetricResult.group_key == group,
            )
            .order_by(MetricResult.computed_at.desc(), MetricResult.id.desc())
            .limit(1)
        ).first()


def test_external_scores_become_series_per_window_and_group(engine: Engine) -> None:
    with make_session_factory(engine)() as session:
        for i, (minutes, tenant, score) in enumerate(
            [(10, "acme", 0.9), (20, "acme", 0.7), (30, "beta", 0.2), (300, "beta", 0.4)]
        ):
            add_trace(
                session,
                f"t{i}",
                NOW - timedelta(minutes=minutes),
                tags={"tenant": tenant},
                evaluations={
                    "Helpfulness": _result(score),
                    "toxicity": _result(None, "RateLimitError"),
                },
            )
        add_trace(session, "plain", NOW - timedelta(minutes=5))  # no evaluations: not counted
        session.commit()
    cache = ResultsCache()
    job = ExternalJob(definition(load_settings()), _env(engine, cache))
    report = job.run(NOW)
    job.publish()
    assert report.status == "ok" and report.new_traces == 4
    hour = _latest(engine, "external:helpfulness", "1h")
    assert hour is not None and hour.n == 3 and hour.value == pytest.approx(0.6)
    day = _latest(engine, "external:helpfulness", "24h")
    assert day is not None and day.n == 4 and day.value == pytest.approx(0.55)
    acme = _latest(engine, "external:helpfulness", "1h", "tenant=acme")
    assert acme is not None and acme.value == pytest.approx(0.8)
    toxicity = _latest(engine, "external:toxicity", "24h")
    assert toxicity is not None and toxicity.n == 0 and toxicity.errors == 4
    body = QualityCollector(cache, ["tenant"]).render().decode()
    assert (
        'ragpulse_metric_value{metric="external:helpfulness",tenant="acme",window="1h"} 0.8' in body
    )

    # a changed result is picked up on the next run (its trace's updated_at moved)
    with make_session_factory(engine)() as session:
        session.execute(
            update(Trace)
            .where(Trace.trace_id == "t0")
            .values(evaluations={"Helpfulness": _result(0.0)}, updated_at=NOW)
        )
        session.commit()
    report = job.run(NOW + timedelta(seconds=60))
    assert report.new_traces == 1
    hour = _latest(engine, "external:helpfulness", "1h")
    assert hour is not None and hour.value == pytest.approx((0.0 + 0.7 + 0.2) / 3)


def test_names_are_cleaned_and_bounded(engine: Engine) -> None:
    with make_session_factory(engine)() as session:
        for i in range(6):
            evaluations = {"relevance": _result(1.0), "Tone / Style!": _result(0.5)}
            evaluations[f"ad-hoc {i}"] = _result(float(i) / 10)
            add_trace(session, f"t{i}", NOW - timedelta(minutes=i + 1), evaluations=evaluations)
        session.commit()
    settings = load_settings(external={"max_names": 3})
    job = definition(settings).factory
    assert job is not None
    runner = job(definition(settings), _env(engine))
    report = runner.run(NOW)
    with make_session_factory(engine)() as session:
        metrics = set(session.scalars(select(MetricResult.metric).distinct()))
    # the two names every trace has, one ad-hoc name; the other five fold into `other`
    assert {"external:relevance", "external:tone_style", "external:other"} <= metrics
    assert len(metrics) == 4
    assert "folded into external:other" in report.message
    (names,) = [f for f in report.labels if f.label == "metric"]
    assert names.seen == 8 and len(names.kept) == 3 and names.capped == 5
    other = _latest(engine, "external:other", "1h")
    assert other is not None and other.n == 5


def test_metric_names() -> None:
    assert metric_name("Answer Quality", 64) == "external:answer_quality"
    assert metric_name("hit_rate@5", 64) == "external:hit_rate@5"
    assert metric_name("!!!", 64) is None
    assert metric_name(7, 64) is None
    assert metric_name("a" * 100, 16) == "external:" + "a" * 16
    assert "external" in JOB_NAMES


def test_the_worst_traces_of_an_external_series(engine: Engine) -> None:
    from collector.jobs.external_traces import worst_external

    with make_session_factory(engine)() as session:
        for i, (tenant, score, error) in enumerate(
            [("acme", 0.9, None), ("acme", 0.1, None), ("beta", 0.4, None), ("beta", None, "E")]
        ):
            add_trace(
                session,
                f"x{i}",
                NOW - timedelta(minutes=10 + i),
                tags={"tenant": tenant},
                evaluations={"Helpfulness": {**_result(score, error), "explanation": f"why {i}"}},
            )
        add_trace(
            session, "old", NOW - timedelta(hours=3), evaluations={"Helpfulness": _result(0.0)}
        )
        session.commit()
        window = {"since": NOW - timedelta(hours=1), "until": NOW}
        found = worst_external(session, metric="external:helpfulness", **window)
        assert [(f.trace_id, f.value, f.reason) for f in found] == [
            ("x1", 0.1, "why 1"),
            ("x2", 0.4, "why 2"),
            ("x0", 0.9, "why 0"),
        ]
        acme = worst_external(
            session, metric="external:helpfulness", where={"tenant": "beta"}, **window
        )
        assert [f.trace_id for f in acme] == ["x2"] and acme[0].tenant == "beta"
        failed = worst_external(session, metric="external:helpfulness", errors=True, **window)
        assert [(f.trace_id, f.error) for f in failed] == [("x3", "E")]
        assert worst_external(session, metric="external:toxicity", **window) == []
