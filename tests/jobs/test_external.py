"""The `external` job: the application's own evaluation results as `external:<name>`
series, per window and group, with the number of names bounded."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, select, update

from collector.jobs.catalog.external import ExternalJob, definition, metric_name
from collector.jobs.run.definition import JobEnvironment
from collector.jobs.scheduler import JOB_NAMES
from collector.jobs.windows.window import parse_windows
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
    from collector.jobs.queries.external_traces import worst_external

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


# -- the outcomes stored per name and the windows from the bucket sums (issue 31) ---------


def _job(engine: Engine, cache: ResultsCache | None = None, **external: Any) -> ExternalJob:
    settings = load_settings(external=external) if external else load_settings()
    return ExternalJob(
        definition(settings),
        _env(engine, cache),
        settings.external.max_names,
        settings.external.max_name_length,
    )


def _series(cache: ResultsCache) -> dict[tuple[str, str, str], Any]:
    return {(p.metric, p.window, p.group_key): p for p in cache.snapshot()}


def _spy_fetch(job: ExternalJob) -> list[int]:
    """Counts the trace rows each of `job`'s fetches reads."""
    fetched: list[int] = []
    fetch = job._fetch

    def counting(*args: Any, **kwargs: Any) -> Any:
        rows = fetch(*args, **kwargs)
        fetched.append(len(rows))
        return rows

    job._fetch = counting  # type: ignore[method-assign]
    return fetched


def test_bucket_sums_equal_the_stored_outcomes_after_evaluations_change(engine: Engine) -> None:
    from collector.store.models import JobOutcome
    from tests.jobs.helpers import assert_buckets_match_outcomes, bucket_rows

    with make_session_factory(engine)() as session:
        for i in range(8):
            add_trace(
                session,
                f"t{i}",
                NOW - timedelta(minutes=3 * i + 1),
                tags={"tenant": "acme" if i % 2 else "beta"},
                evaluations={
                    "helpfulness": _result(i / 10),
                    "tone": _result(None, "Timeout") if i % 3 == 0 else _result(0.5),
                },
            )
        session.commit()
    job = _job(engine)
    assert job.run(NOW).new_traces == 8
    with make_session_factory(engine)() as session:
        stored = session.scalars(select(JobOutcome).where(JobOutcome.job == "external")).all()
        assert len(stored) == 8 and bucket_rows(session, "external")
        assert_buckets_match_outcomes(session, "external")
        # a score changes, a name goes, a name comes, one trace moves to another tenant
        changes: dict[str, dict[str, Any]] = {
            "t0": {"evaluations": {"helpfulness": _result(1.0)}},
            "t1": {"evaluations": {"helpfulness": _result(0.3), "new": _result(0.9)}},
            "t2": {"tags": {"tenant": "gamma"}},
        }
        for trace_id, values in changes.items():
            session.execute(
                update(Trace).where(Trace.trace_id == trace_id).values(**values, updated_at=NOW)
            )
        session.commit()
    assert job.run(NOW + timedelta(seconds=30)).new_traces == 3
    assert job.run(NOW + timedelta(seconds=60)).new_traces == 0  # each change counted once
    with make_session_factory(engine)() as session:
        assert_buckets_match_outcomes(session, "external")
    day = _latest(engine, "external:helpfulness", "24h")
    scores = [1.0, 0.3] + [i / 10 for i in range(2, 8)]
    assert day is not None and day.n == 8 and day.value == pytest.approx(sum(scores) / 8)
    tone = _latest(engine, "external:tone", "24h")
    assert tone is not None and tone.n == 4 and tone.errors == 2  # t0's error went with it
    new = _latest(engine, "external:new", "24h")
    assert new is not None and new.n == 1 and new.value == pytest.approx(0.9)
    gamma = _latest(engine, "external:helpfulness", "24h", "tenant=gamma")
    assert gamma is not None and gamma.n == 1


def test_a_restart_publishes_the_same_series_without_reading_the_window(
    engine: Engine,
) -> None:
    with make_session_factory(engine)() as session:
        for i in range(12):
            add_trace(
                session,
                f"t{i}",
                NOW - timedelta(minutes=7 * i + 1),
                tags={"tenant": "acme" if i % 3 else "beta"},
                evaluations={"quality": _result(i / 12), f"rare {i % 4}": _result(0.5)},
            )
        session.commit()
    first_cache = ResultsCache()
    first = _job(engine, first_cache, max_names=2)
    assert first.run(NOW).new_traces == 12
    first.publish()

    again_cache = ResultsCache()
    again = _job(engine, again_cache, max_names=2)
    fetched = _spy_fetch(again)
    report = again.run(NOW)
    again.publish()
    assert report.new_traces == 0 and sum(fetched) == 0  # no trace read again
    assert again.folded == 3  # nothing per trace: only counts are kept between runs
    assert _series(again_cache) == _series(first_cache)
    assert ("external:other", "24h", "") in _series(again_cache)


def test_the_names_kept_after_a_restart_are_the_most_frequent(engine: Engine) -> None:
    def add(prefix: str, count: int, names: tuple[str, ...], minutes: int) -> None:
        with make_session_factory(engine)() as session:
            for i in range(count):
                evaluations = {name: _result(0.5) for name in names}
                add_trace(
                    session,
                    f"{prefix}{i}",
                    NOW - timedelta(minutes=minutes + i),
                    evaluations=evaluations,
                )
            session.commit()

    add("early", 1, ("alpha", "beta"), 50)
    job = _job(engine, max_names=2)
    job.run(NOW - timedelta(minutes=20))  # alpha and beta came first
    add("late", 4, ("gamma",), 10)
    add("later", 3, ("delta",), 5)
    job.run(NOW)

    cache = ResultsCache()
    restarted = _job(engine, cache, max_names=2)
    fetched = _spy_fetch(restarted)
    report = restarted.run(NOW + timedelta(seconds=10))
    restarted.publish()
    assert sum(fetched) == 0
    (names,) = [f for f in report.labels if f.label == "metric"]
    assert names.kept == {"external:gamma", "external:delta"}
    assert names.seen == 4 and names.capped == 2
    metrics = {metric for metric, _, _ in _series(cache)}
    assert metrics == {"external:gamma", "external:delta", "external:other"}
    other = _series(cache)[("external:other", "24h", "")]
    assert other.n == 2  # alpha's and beta's results of the one early trace


def test_other_pools_each_folded_result_as_one_value(engine: Engine) -> None:
    """The pooled semantics changed with issue 31: `external:other` is the sums of the
    folded names (each folded score one value), no longer a per-trace mean of them."""
    with make_session_factory(engine)() as session:
        add_trace(
            session,
            "t0",
            NOW - timedelta(minutes=1),
            evaluations={"keep": _result(1.0), "x": _result(0.2), "y": _result(0.4)},
        )
        add_trace(
            session,
            "t1",
            NOW - timedelta(minutes=2),
            evaluations={"keep": _result(1.0), "x": _result(0.6), "z": _result(None, "E")},
        )
        session.commit()
    _job(engine, max_names=1).run(NOW)
    other = _latest(engine, "external:other", "1h")
    assert other is not None and other.n == 3 and other.value == pytest.approx(0.4)
    assert other.errors == 1


def test_a_first_start_reads_the_window_in_chunks_whatever_the_watermark(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from collector.jobs.catalog import external
    from collector.jobs.recording import cursor as sync
    from collector.store.models import JobState

    monkeypatch.setattr(sync, "BACKLOG_CHUNK", 2)
    monkeypatch.setattr(external, "BACKLOG_CHUNK", 2)
    with make_session_factory(engine)() as session:
        for i in range(5):
            add_trace(
                session,
                f"t{i}",
                NOW - timedelta(hours=i + 1),
                evaluations={"quality": _result(0.1 * i)},
            )
        # the in-memory job of before left its watermark, but no outcomes
        session.add(JobState(job="external", watermark=NOW - timedelta(minutes=1)))
        session.commit()
    job = _job(engine)
    fetched = _spy_fetch(job)
    assert job.run(NOW).new_traces == 5
    assert max(fetched) <= 2 and sum(fetched) == 5
    day = _latest(engine, "external:quality", "24h")
    assert day is not None and day.n == 5
