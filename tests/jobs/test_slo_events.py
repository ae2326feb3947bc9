"""SLO events: classified from real job outcomes, counted once, monotonic, on both databases."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from sqlalchemy import select

from collector.jobs.scheduler import build_runner, metric_jobs
from collector.settings import SloSpec, load_settings
from collector.slo.events import (
    SloEventRecorder,
    events_of,
    prune,
    read_counts,
    reconcile,
    record,
)
from collector.store.models import JobOutcome, SloEvent
from collector.store.session import make_engine, make_session_factory
from evaluators.outcome import Failed, Score, Skipped
from exporters.slo import SloCollector
from ragpulse.job_setup import job_environment
from tests.jobs.helpers import add_trace

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
HIT5 = SloSpec(
    name="retrieval-hit", metric="hit_rate@5", target=0.95, window="28d", op="==", threshold=1.0
)
FAITH = SloSpec(name="faithful", metric="faithfulness", target=0.95, window="28d", threshold=0.7)
JUDGE_OK = SloSpec(
    name="judge-ok", metric="faithfulness", target=0.99, window="28d", kind="success"
)


def _counts(factory: Any) -> dict[tuple[str, str, str], int]:
    with factory() as session:
        return {(s, t, o): n for s, t, o, n in read_counts(session)}


def test_classification_of_outcomes() -> None:
    outcomes = {"faithfulness": Score(0.7)}
    [faith, ok] = events_of((FAITH, JUDGE_OK), "t", NOW.timestamp(), {"tenant": "acme"}, outcomes)
    assert (faith.good, ok.good, faith.tenant) == (True, True, "acme")
    assert events_of((FAITH,), "t", 0.0, None, {"faithfulness": Score(0.69)})[0].good is False
    # a failed judge call is no faithfulness event, but a bad event of the success SLO
    failed = events_of((FAITH, JUDGE_OK), "t", 0.0, None, {"faithfulness": Failed("Timeout")})
    assert [(e.slo, e.good, e.tenant) for e in failed] == [("judge-ok", False, "")]
    assert (
        events_of((FAITH, JUDGE_OK), "t", 0.0, None, {"faithfulness": Skipped("no contexts")}) == []
    )


def test_real_job_events_are_counted_once_across_reruns_and_restarts(db_url: str) -> None:
    """The benchmark job scores hit_rate@5 on stored traces; the observer records its
    events; running the job again, reconciling, and a fresh process change no count."""
    settings = load_settings(scheduler={"jobs": ["real_users_benchmark"]})
    engine = make_engine(db_url)
    factory = make_session_factory(engine)
    with factory() as session:
        for i in range(30):
            hit = i % 3 != 0  # 10 misses: the relevant document is not retrieved
            add_trace(
                session,
                f"t{i:02d}",
                NOW - timedelta(minutes=5 + i),
                purposes=("real_users_benchmark",),
                contexts=[{"id": "d1"}, {"id": "d2"}],
                relevant_ids=["d1" if hit else "d9"],
                tags={"tenant": "acme" if i < 20 else "beta"},
            )
        session.commit()
    recorder = SloEventRecorder((HIT5,), factory, max_tenants=10)
    env = job_environment(settings, engine, observers=(recorder,))
    job = build_runner(settings, engine, env).jobs["real_users_benchmark"]
    assert job.run(NOW).status == "ok"
    expected = {
        ("retrieval-hit", "acme", "good"): 13,
        ("retrieval-hit", "acme", "bad"): 7,
        ("retrieval-hit", "beta", "good"): 7,
        ("retrieval-hit", "beta", "bad"): 3,
    }
    assert _counts(factory) == expected
    # the same outcomes again (a replayed observer call, a re-run) count nothing
    with factory() as session:
        rows = session.execute(
            select(JobOutcome.trace_id, JobOutcome.ts, JobOutcome.groups, JobOutcome.outcomes)
        ).all()
    evaluated = [
        events_of(
            (HIT5,),
            t,
            ts.replace(tzinfo=UTC).timestamp(),
            g,
            {"hit_rate@5": Score(float(o["hit_rate@5"]))},
        )
        for t, ts, g, o in rows
    ]
    with factory() as session, session.begin():
        assert not record(session, [e for es in evaluated for e in es], 10)
    assert job.run(NOW + timedelta(minutes=10)).status == "ok"
    jobs = metric_jobs(settings)
    with factory() as session, session.begin():
        assert reconcile(session, (HIT5,), jobs, NOW - timedelta(days=1), 10) == 0
    assert _counts(factory) == expected
    # events the observer missed (deleted here, as if the process died before it ran)
    with factory() as session, session.begin():
        session.execute(SloEvent.__table__.delete().where(SloEvent.trace_id.in_(["t00", "t01"])))
    with factory() as session, session.begin():
        assert reconcile(session, (HIT5,), jobs, NOW - timedelta(days=1), 10) == 2
    recounted = _counts(factory)
    assert recounted[("retrieval-hit", "acme", "bad")] == 8  # t00 (a miss) counted again
    assert recounted[("retrieval-hit", "acme", "good")] == 14  # and t01 (a hit)
    # pruned events leave the counts as they are
    with factory() as session, session.begin():
        assert prune(session, NOW) == 30
    assert _counts(factory) == recounted
    # a fresh process (new engine and collector) serves the same counters
    registry = CollectorRegistry()
    registry.register(SloCollector((HIT5,), make_session_factory(make_engine(db_url))))
    text = generate_latest(registry).decode()
    assert 'ragpulse_slo_events_total{outcome="bad",slo="retrieval-hit",tenant="beta"} 3.0' in text
    assert (
        'ragpulse_slo_events_total{outcome="good",slo="retrieval-hit",tenant="acme"} 14.0' in text
    )
    assert 'ragpulse_slo_objective{metric="hit_rate@5",slo="retrieval-hit"} 0.95' in text
    assert 'ragpulse_slo_window_seconds{slo="retrieval-hit"} 2.4192e+06' in text


def test_tenants_past_the_bound_count_as_other_and_known_ones_keep_theirs(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    factory = make_session_factory(engine)
    scores = {"faithfulness": Score(0.9)}
    with factory() as session, session.begin():
        first = [
            e
            for i, t in enumerate("abc")
            for e in events_of((FAITH,), f"x{i}", 0.0, {"tenant": t}, scores)
        ]
        record(session, first, max_tenants=2)
    with factory() as session, session.begin():
        later = [
            e
            for i, t in enumerate("dab")
            for e in events_of((FAITH,), f"y{i}", 0.0, {"tenant": t}, scores)
        ]
        record(session, later, max_tenants=2)
    counts = _counts(factory)
    assert counts[("faithful", "a", "good")] == 2
    assert counts[("faithful", "b", "good")] == 2
    assert counts[("faithful", "other", "good")] == 2  # c, then d
    assert counts[("faithful", "a", "bad")] == 0  # both outcomes exist from the first event
    assert ("faithful", "c", "good") not in counts


def test_database_error_leaves_counters_out_not_zero(tmp_path: Any) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/none.db")  # no tables
    registry = CollectorRegistry()
    registry.register(SloCollector((FAITH,), make_session_factory(engine)))
    text = generate_latest(registry).decode()
    assert "ragpulse_slo_events_total" not in text
    assert 'ragpulse_slo_objective{metric="faithfulness",slo="faithful"} 0.95' in text
