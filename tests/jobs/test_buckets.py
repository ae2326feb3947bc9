"""Windows from bucket sums equal the row-based aggregation over the same stored outcomes.

Both databases. The reference is today's row-based aggregation (`OutcomeColumns`) over
every stored `job_outcomes` row of the job; the buckets are what the job's runs wrote,
including traces scored again after their outcome or their timestamp changed.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import orjson
import pytest
from scipy import stats
from sqlalchemy import Text, cast, select
from sqlalchemy.orm import Session

from benchmarks.outcome_columns import BOOTSTRAP_MAX_N, OutcomeColumns
from collector.jobs.buckets import store as bucket_store
from collector.jobs.buckets import window_sums as bucket_windows
from collector.jobs.buckets.contributions import Contributions
from collector.jobs.buckets.stats import Sums
from collector.jobs.run.engine import IncrementalJob
from collector.jobs.scheduler import definitions
from collector.settings import load_settings
from collector.store.models import JobBucket, JobOutcome, Trace
from collector.store.session import make_engine, make_session_factory
from ragpulse.job_setup import job_environment
from tests.jobs.helpers import add_trace, assert_buckets_match_outcomes, bucket_rows

NOW = datetime(2026, 3, 2, 12, 0, 30, tzinfo=UTC)
JOB = "real_users_benchmark"


def _add(session: Session, i: int, hours: float, hit: bool, tenant: str) -> None:
    relevant: list[str] | None = ["d1" if hit else "d9"]
    if i % 17 == 0:
        relevant = None  # no ground truth: the retrieval metrics skip it
    add_trace(
        session,
        f"t{i:04d}",
        NOW - timedelta(hours=hours),
        purposes=(JOB,),
        contexts=[{"id": "d1"}, {"id": "d2"}, {"id": "d3"}],
        relevant_ids=relevant,
        tags={"tenant": tenant},
    )


def _epoch(ts: datetime) -> float:
    return (ts if ts.tzinfo else ts.replace(tzinfo=UTC)).timestamp()


def _reference(session: Session, metrics: list[str]) -> OutcomeColumns:
    columns = OutcomeColumns(metrics, ["tenant"])
    query = select(
        JobOutcome.trace_id,
        JobOutcome.trace_updated_at,
        JobOutcome.ts,
        cast(JobOutcome.groups, Text),
        cast(JobOutcome.outcomes, Text),
    ).where(JobOutcome.job == JOB)
    for trace_id, updated, ts, groups, outcomes in session.execute(query):
        columns.put_encoded(
            trace_id,
            _epoch(updated),
            _epoch(ts),
            orjson.loads(groups) if groups else None,
            orjson.loads(outcomes),
        )
    return columns


def _compare(job: IncrementalJob, session: Session, at: datetime) -> int:
    """Every window's aggregates from the sums against the rows'; returns how many were
    compared."""
    env = job.env
    names = [m.name for m in job.per_sample]
    reference = _reference(session, names)
    at_s = _epoch(at)
    longest = max(w.seconds for w in env.windows)
    folds = reference.folds(at_s - longest, env.label_limits)
    points = {
        (w.name, item.group.key, item.aggregate.metric): item.aggregate
        for w, item in job.points_at(session, at)
        if not w.name.startswith(("drift:", "mde"))
    }
    proportions = {m.name: m.spec.proportion for m in job.per_sample}
    compared = 0
    for window in env.windows:
        for item in reference.aggregate(at_s - window.seconds, at_s, proportions, {}, folds=folds):
            want = item.aggregate
            got = points.pop((window.name, item.group.key, want.metric))
            assert got.n == want.n and got.skip_reasons == want.skip_reasons, (window, item)
            assert got.error_types == want.error_types
            if want.value is None:
                assert got.value is None
                continue
            assert got.value == pytest.approx(want.value, rel=1e-12, abs=1e-15)
            if proportions[want.metric]:
                assert got.ci_lower == pytest.approx(want.ci_lower, rel=1e-9, abs=1e-12)
                assert got.ci_upper == pytest.approx(want.ci_upper, rel=1e-9, abs=1e-12)
            elif want.n > BOOTSTRAP_MAX_N:  # the rows' normal interval, widened to Student's t
                assert want.ci_lower is not None and want.ci_upper is not None
                assert got.ci_lower is not None and got.ci_upper is not None
                widen = stats.t.ppf(0.975, want.n - 1) / stats.norm.ppf(0.975)
                half = (want.ci_upper - want.ci_lower) / 2 * widen
                assert got.ci_lower == pytest.approx(want.value - half, rel=1e-6, abs=1e-12)
                assert got.ci_upper == pytest.approx(want.value + half, rel=1e-6, abs=1e-12)
            else:  # Student's t from the sums where the rows' bootstrap was
                assert got.ci_lower is not None and got.ci_upper is not None
                assert got.ci_lower <= got.value <= got.ci_upper
            compared += 1
    assert not points, sorted(points)[:5]
    return compared


def test_windows_from_buckets_equal_the_rows_after_rescoring_and_moves(db_url: str) -> None:
    settings = load_settings(database={"url": db_url}, scheduler={"jobs": [JOB]})
    engine = make_engine(db_url)
    factory = make_session_factory(engine)
    tenants = ["acme", "beta", "gamma"]
    with factory() as session:
        for i in range(800):
            hours = (i * 7.3) % (8 * 24)  # spread over 8 days: some fall out of 7d
            _add(session, i, hours, hit=(i * 31) % 10 < 6, tenant=tenants[i % 3])
        session.commit()
    env = job_environment(settings, engine, embedder=None, judge=None)
    job = IncrementalJob(definitions(settings)[JOB], env)
    assert job.run(NOW).status == "ok"
    with factory() as session:
        assert_buckets_match_outcomes(session, JOB)
        assert _compare(job, session, NOW) > 100

    # Feedback changes 200 traces' ground truth, 20 traces' timestamps move (a late root
    # span): each is scored again and moves its contribution exactly once.
    later = NOW + timedelta(minutes=7)
    changed = 0
    with factory() as session:
        for row in session.execute(select(Trace).where(Trace.trace_id < "t0200")).scalars():
            row.relevant_ids = ["d3"]
            row.updated_at = later
            changed += _epoch(row.timestamp) >= _epoch(later) - 7 * 86400
        for row in session.execute(
            select(Trace).where(Trace.trace_id >= "t0500", Trace.trace_id < "t0520")
        ).scalars():
            row.timestamp = row.timestamp - timedelta(minutes=90)
            row.updated_at = later
            changed += _epoch(row.timestamp) >= _epoch(later) - 7 * 86400
        session.commit()
    again = IncrementalJob(definitions(settings)[JOB], env)  # a restarted worker
    assert again.run(later).new_traces == changed > 150
    assert again.run(later).new_traces == 0  # nothing counts twice on a re-run
    with factory() as session:
        assert_buckets_match_outcomes(session, JOB)
        assert _compare(again, session, later) > 100
        # the window's edges: a time not on a minute boundary cuts the first bucket
        assert _compare(again, session, later - timedelta(seconds=37)) > 100


@pytest.mark.parametrize("n", [2, 3, 30, 499, 500, 501, 5_000, 500_000])
def test_a_means_interval_is_students_t_at_every_n(n: int) -> None:
    """One interval method at every volume: Student's t with n - 1 degrees of freedom
    (scipy's), which meets the normal interval smoothly, so no series' interval jumps when
    its volume, or its job's, crosses a bound."""
    values = np.linspace(0.0, 1.0, n) ** 2
    sums = Sums(n, float(values.sum()), float((values * values).sum()))
    lo, hi = bucket_windows._interval(sums, proportion=False)
    want = stats.t.interval(0.95, n - 1, loc=values.mean(), scale=stats.sem(values))
    assert (lo, hi) == pytest.approx(want, rel=1e-9)


def test_contributions_move_a_contribution_out_and_in_exactly() -> None:
    gathered = Contributions()
    gathered.add(120.0, {"tenant": "acme"}, {"m": 0.25, "k": {"skipped": "no labels"}})
    gathered.add(120.0, {"tenant": "acme"}, {"m": 0.25, "k": {"skipped": "no labels"}}, -1)
    assert list(gathered.changes().items()) == []
    gathered.add(61.0, None, {"m": 1.0, "w": {"error": "timeout", "transient": True}})
    sums = dict(gathered.changes().items())
    assert sums[("m", "", 1, "")] == Sums(1, 1.0, 1.0, 1, 0.0, 0.0)
    assert ("w", "", 1, "error:timeout") not in sums  # waiting for a retry: not counted
    assert sums[("", "", 1, "")].n == 1
    assert math.isclose(Sums(1, 0.5).total, 0.5)


def test_rebuild_streams_the_stored_outcomes_into_the_same_sums(db_url: str) -> None:
    settings = load_settings(database={"url": db_url}, scheduler={"jobs": [JOB]})
    engine = make_engine(db_url)
    factory = make_session_factory(engine)
    with factory() as session:
        for i in range(300):
            _add(session, i, (i * 0.37) % 50, hit=i % 2 == 0, tenant="acme")
        session.commit()
    env = job_environment(settings, engine, embedder=None, judge=None)
    IncrementalJob(definitions(settings)[JOB], env).run(NOW)
    with factory() as session:
        written = bucket_rows(session, JOB)
        read = bucket_store.rebuild(session, JOB, NOW - timedelta(days=30), chunk=64)
        session.commit()
        assert read == 300
        rebuilt = bucket_rows(session, JOB)
        assert rebuilt.keys() == written.keys()
        for key, want in written.items():
            assert rebuilt[key] == pytest.approx(want, rel=1e-12, abs=1e-9), key


def test_retention_removes_the_sums_of_the_minutes_it_removes(db_url: str) -> None:
    from collector.store.retention import expire

    settings = load_settings(database={"url": db_url}, scheduler={"jobs": [JOB]})
    engine = make_engine(db_url)
    factory = make_session_factory(engine)
    with factory() as session:
        for i in range(100):
            _add(session, i, (i * 1.3) % 100, hit=i % 2 == 0, tenant="acme")
        session.commit()
    env = job_environment(settings, engine, embedder=None, judge=None)
    IncrementalJob(definitions(settings)[JOB], env).run(NOW)
    cutoff = NOW - timedelta(hours=50)
    report = expire(engine, cutoff)
    assert report.buckets > 0
    with factory() as session:
        kept = session.execute(select(JobBucket.bucket).where(JobBucket.job == JOB)).scalars()
        assert min(kept) * 60 >= cutoff.timestamp()


def test_a_backfills_sums_in_hand_give_the_windows_the_queries_give(db_url: str) -> None:
    """`BucketHistory` (read once for a back-fill's span) against a query per window, at
    steps off the minute grid: the same groups, counts and values, the same detectors."""
    from collector.jobs.buckets.history import BucketHistory

    settings = load_settings(database={"url": db_url}, scheduler={"jobs": [JOB]})
    engine = make_engine(db_url)
    factory = make_session_factory(engine)
    with factory() as session:
        for i in range(600):
            _add(session, i, (i * 0.61) % 200, hit=(i * 7) % 10 < 7, tenant=["a", "b"][i % 2])
        session.commit()
    env = job_environment(settings, engine, embedder=None, judge=None)
    job = IncrementalJob(definitions(settings)[JOB], env, history_s=3 * 86400)
    job.run(NOW)
    steps = [NOW - timedelta(hours=h, seconds=13) for h in (50, 20, 3, 0)]
    with factory() as session:
        history = BucketHistory(session, JOB, steps[0].timestamp() - job.longest_s, NOW.timestamp())
        for at in steps:
            job._drift_cache = None
            queried = {
                (w.name, i.group.key, i.aggregate.metric): i.aggregate
                for w, i in job.points_at(session, at)
            }
            job._drift_cache = None
            held = {
                (w.name, i.group.key, i.aggregate.metric): i.aggregate
                for w, i in job.points_at(session, at, history)
            }
            assert queried.keys() == held.keys()
            for key, want in queried.items():
                got = held[key]
                assert (got.n, got.skip_reasons) == (want.n, want.skip_reasons), key
                if want.value is None:
                    assert got.value is None, key
                else:
                    assert got.value == pytest.approx(want.value, rel=1e-9, abs=1e-12), key


def test_a_jobs_detectors_are_the_engines_over_every_stored_row(db_url: str) -> None:
    """One statistic at every volume: a job's detectors (from its stored bucket sums) are
    `drift_points` over columns of every stored row, value for value."""
    from benchmarks.outcome_columns import drift_points

    settings = load_settings(database={"url": db_url}, scheduler={"jobs": [JOB]})
    engine = make_engine(db_url)
    factory = make_session_factory(engine)
    with factory() as session:
        for i in range(900):
            _add(session, i, (i * 0.21) % 180, hit=(i * 3) % 10 < 6, tenant=["a", "b"][i % 2])
        session.commit()
    env = job_environment(settings, engine, embedder=None, judge=None)
    assert env.drift is not None
    job = IncrementalJob(definitions(settings)[JOB], env)
    job.run(NOW)
    with factory() as session:
        rows = _reference(session, [m.name for m in job.per_sample])
        at = _epoch(NOW)
        folds = rows.folds(at - job.longest_s, env.label_limits)
        want = drift_points(rows, job._facts, at, job.longest_s, folds, env.drift)
        job._drift_cache = None
        got = [p for p in job.points_at(session, NOW) if p[0].name.startswith(("drift:", "mde"))]
        key = lambda p: (p[0].name, p[1].group.key, p[1].aggregate.metric)  # noqa: E731
        assert len(got) == len(want) > 0
        mine = {key(p): p[1].aggregate for p in got}
        for p in want:
            theirs, found = p[1].aggregate, mine[key(p)]
            assert found.n == theirs.n, key(p)
            if theirs.value is None:
                assert found.value is None, key(p)
            else:
                assert found.value == pytest.approx(theirs.value, rel=1e-9, abs=1e-12), key(p)
