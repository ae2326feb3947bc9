"""Window quantiles from the bucket bins against numpy's exact quantiles of the same rows.

Both databases, the real `ux` job (it scores `latency_ms` on every trace; without an
embedder its other metrics are skipped). The reference is numpy's `method="lower"`
quantile (DDSketch's rank convention) of the scored latencies of the job's stored
`job_outcomes` rows in each window and group, `tenant=other` holding the folded tenants;
the bins' quantiles lie within `RELATIVE_ACCURACY` of it after traces are scored again
and moved, at off-minute edges, after a rebuild and after retention, and the stored bins
are the outcomes' bins counted afresh.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import orjson
import pytest
from sqlalchemy import Text, cast, delete, select, text
from sqlalchemy.orm import Session

from collector.jobs.buckets import store as bucket_store
from collector.jobs.run.engine import IncrementalJob
from collector.jobs.scheduler import definitions
from collector.jobs.windows.window import Window
from collector.settings import load_settings
from collector.store.models import BUCKET_S, JobBucketBin, JobOutcome, Trace
from collector.store.session import make_engine, make_session_factory
from evaluators.quantiles import QUANTILES, RELATIVE_ACCURACY, quantile_names
from ragpulse.job_setup import job_environment
from tests.jobs.helpers import add_trace, assert_buckets_match_outcomes, bin_rows

NOW = datetime(2026, 3, 2, 12, 0, 30, tzinfo=UTC)
JOB = "ux"
NAMES = quantile_names("latency_ms")
TENANTS = ("acme",) * 5 + ("beta",) * 3 + ("gamma",) * 2
"""With `labels.max_values` 2, gamma (the least frequent) folds into `tenant=other`."""

Points = dict[tuple[str, str, str], tuple[float | None, int]]


def _latency(i: int) -> float | None:
    if i % 23 == 0:
        return None  # no latency reported: skipped, in no bin
    if i % 31 == 0:
        return 0.0  # the zero bin
    return float(np.random.default_rng(i).lognormal(np.log(900.0), 0.8))


def _job(
    db_url: str, count: int, hours: Any, edges: tuple[datetime, ...] = ()
) -> tuple[IncrementalJob, Any]:
    """The ux job over `count` traces `hours(i)` before NOW, and for each of `edges` (an
    `at` off the minute grid) a trace 5 s before and after each window's start and end:
    in the window's edge minutes, one in and one out."""
    settings = load_settings(
        database={"url": db_url}, scheduler={"jobs": [JOB]}, labels={"max_values": 2}
    )
    engine = make_engine(db_url)
    factory = make_session_factory(engine)
    stamps = [NOW - timedelta(hours=hours(i)) for i in range(count)]
    for at in edges:
        for seconds in (0, 3600, 86400, 7 * 86400):
            stamps += [at - timedelta(seconds=seconds + 5), at - timedelta(seconds=seconds - 5)]
    with factory() as session:
        for i, ts in enumerate(stamps):
            tags = {"tenant": TENANTS[i % len(TENANTS)]}
            add_trace(session, f"t{i:04d}", ts, latency_ms=_latency(i), tags=tags)
        session.commit()
    env = job_environment(settings, engine, embedder=None, judge=None)
    return IncrementalJob(definitions(settings)[JOB], env), factory


def _epoch(ts: datetime) -> float:
    return (ts if ts.tzinfo else ts.replace(tzinfo=UTC)).timestamp()


def _exact(session: Session, at: datetime, windows: list[Window], longest: float) -> Points:
    """numpy's quantiles (`method="lower"`) of the stored rows per window and group."""
    query = select(JobOutcome.ts, cast(JobOutcome.groups, Text), cast(JobOutcome.outcomes, Text))
    ts, tenants, values = [], [], []
    for stamp, groups, outcomes in session.execute(query.where(JobOutcome.job == JOB)):
        value = orjson.loads(outcomes).get("latency_ms")
        ts.append(_epoch(stamp))
        tenants.append((orjson.loads(groups) or {}).get("tenant", ""))
        values.append(float(value) if isinstance(value, (int, float)) else np.nan)
    stamps, names, scores = np.array(ts), np.array(tenants), np.array(values)
    at_s = _epoch(at)
    seen = Counter(names[stamps >= at_s - longest].tolist())
    kept = {t for t, _ in sorted(seen.items(), key=lambda kv: (-kv[1], kv[0]))[:2]}
    out: Points = {}
    for window in windows:
        inside = (stamps >= at_s - window.seconds) & (stamps <= at_s)
        masks = {"": inside}
        for tenant in set(names[inside].tolist()):
            key = f"tenant={tenant if tenant in kept else 'other'}"
            masks[key] = masks.get(key, np.zeros_like(inside)) | (inside & (names == tenant))
        for key, mask in masks.items():
            chosen = scores[mask & ~np.isnan(scores)]
            qs = np.quantile(chosen, QUANTILES, method="lower") if chosen.size else [None] * 3
            for name, q in zip(NAMES, qs, strict=True):
                out[(window.name, key, name)] = (None if q is None else float(q), int(chosen.size))
    return out


def _got(job: IncrementalJob, session: Session, at: datetime, history: Any = None) -> Points:
    return {
        (w.name, item.group.key, item.aggregate.metric): (item.aggregate.value, item.aggregate.n)
        for w, item in job.points_at(session, at, history)
        if item.aggregate.metric in NAMES and not item.group.key.startswith("version")
    }


def _compare(job: IncrementalJob, session: Session, at: datetime, history: Any = None) -> int:
    """Every quantile point within the relative accuracy of the exact one; how many."""
    want = _exact(session, at, list(job.env.windows), job.longest_s)
    got = _got(job, session, at, history)
    assert got.keys() == want.keys()
    for key, (exact, n) in want.items():
        value, count = got[key]
        assert count == n, key
        if exact is None:
            assert value is None, key
        else:
            assert value is not None and abs(value - exact) <= RELATIVE_ACCURACY * abs(exact), (
                key,
                value,
                exact,
            )
    return sum(1 for exact, _ in want.values() if exact is not None)


def test_quantiles_from_bins_stay_within_their_accuracy_after_rescoring_and_moves(
    db_url: str,
) -> None:
    later = NOW + timedelta(minutes=7)
    edges = (NOW, later - timedelta(seconds=37))
    job, factory = _job(db_url, 900, lambda i: (i * 7.3) % (8 * 24), edges)  # some out of 7d
    assert job.run(NOW).status == "ok"
    with factory() as session:
        assert_buckets_match_outcomes(session, JOB)
        assert any(key[3] == 0 for key in bin_rows(session, JOB))  # the zero bin is used
        assert _compare(job, session, NOW) > 30

    # New latencies for 200 traces, 20 timestamps moved by 90 minutes: each trace is
    # scored again and moves its bins (old out, new in) exactly once.
    with factory() as session:
        for row in session.execute(select(Trace).where(Trace.trace_id < "t0200")).scalars():
            row.latency_ms = None if row.latency_ms is None else row.latency_ms * 3.0 + 50.0
            row.updated_at = later
        for row in session.execute(
            select(Trace).where(Trace.trace_id >= "t0500", Trace.trace_id < "t0520")
        ).scalars():
            row.timestamp = row.timestamp - timedelta(minutes=90)
            row.updated_at = later
        session.commit()
    again = IncrementalJob(job.definition, job.env)  # a restarted worker
    assert again.run(later).new_traces > 150
    assert again.run(later).new_traces == 0  # nothing counts twice on a re-run
    with factory() as session:
        assert_buckets_match_outcomes(session, JOB)
        assert _compare(again, session, later) > 30
        # off the minute grid: the edge minutes' bins are cut by their rows
        assert _compare(again, session, edges[1]) > 30


def test_a_small_window_takes_the_bins_quantiles_too(db_url: str) -> None:
    """150 traces: the quantiles still come from the bins (one method at every volume),
    within their accuracy of numpy's exact ones."""
    job, factory = _job(db_url, 150, lambda i: (i * 0.9) % 30)
    job.run(NOW)
    with factory() as session:
        assert _compare(job, session, NOW) > 20


def test_rebuild_and_the_upgrade_to_bins_recount_them_from_the_outcomes(db_url: str) -> None:
    job, factory = _job(db_url, 300, lambda i: (i * 0.37) % 50)
    job.run(NOW)
    with factory() as session:
        written = bin_rows(session, JOB)
        assert len(written) > 300
        assert bucket_store.rebuild(session, JOB, NOW - timedelta(days=30), chunk=64) == 300
        session.commit()
        assert bin_rows(session, JOB) == written
        # sums stored before rev. 0015 have no bins: a worker's first run rebuilds both
        session.execute(delete(JobBucketBin).where(JobBucketBin.job == JOB))
        session.commit()
    fresh = IncrementalJob(job.definition, job.env)
    assert fresh.run(NOW).new_traces == 0
    with factory() as session:
        assert bin_rows(session, JOB) == written
        assert_buckets_match_outcomes(session, JOB)


def test_the_upgrade_rebuild_refreshes_the_planners_statistics(db_url: str) -> None:
    """A rebuild writes millions of rows at once; until autovacuum analyzes them PostgreSQL
    plans the windows' sums for empty tables (6.8 s instead of 1.8 s for the 7-day bins at
    10M outcomes). The worker that rebuilt runs ANALYZE itself."""
    if not db_url.startswith("postgresql"):
        pytest.skip("planner statistics are PostgreSQL's")
    job, factory = _job(db_url, 50, lambda i: (i * 0.37) % 50)
    job.run(NOW)
    with factory() as session:
        session.execute(delete(JobBucketBin).where(JobBucketBin.job == JOB))  # before rev. 0015
        session.commit()
    IncrementalJob(job.definition, job.env).run(NOW)
    query = text(
        "SELECT relname FROM pg_stat_user_tables WHERE last_analyze IS NOT NULL "
        "AND relname IN ('job_buckets', 'job_bucket_bins')"
    )
    with factory() as session:
        assert sorted(session.execute(query).scalars()) == ["job_bucket_bins", "job_buckets"]


def test_retention_removes_the_bins_of_the_minutes_it_removes(db_url: str) -> None:
    from collector.store.retention import expire

    job, factory = _job(db_url, 400, lambda i: (i * 0.31) % 100)
    job.run(NOW)
    cutoff = NOW - timedelta(hours=50)
    report = expire(job.env.session_factory.kw["bind"], cutoff)
    assert report.bins > 0
    with factory() as session:
        kept = bin_rows(session, JOB)
        assert kept and min(key[2] for key in kept) * BUCKET_S >= cutoff.timestamp()
        windows = [w for w in job.env.windows if w.seconds <= 24 * 3600]  # after the cutoff
        want = _exact(session, NOW, windows, job.longest_s)
        names = {w.name for w in windows}
        got = {k: v for k, v in _got(job, session, NOW).items() if k[0] in names}
        assert got.keys() == want.keys()
        for key, (exact, n) in want.items():
            assert got[key][1] == n
            if exact is not None:
                value = got[key][0]
                assert value is not None and abs(value - exact) <= RELATIVE_ACCURACY * exact


def test_a_backfills_history_gives_the_quantiles_a_query_gives(db_url: str) -> None:
    from collector.jobs.buckets.history import BucketHistory

    steps = [NOW - timedelta(hours=h, seconds=13) for h in (50, 3, 0)]
    job, factory = _job(db_url, 500, lambda i: (i * 0.61) % 200, tuple(steps))
    history_job = IncrementalJob(job.definition, job.env, history_s=3 * 86400)
    history_job.run(NOW)
    with factory() as session:
        since = steps[0].timestamp() - history_job.longest_s
        history = BucketHistory(session, JOB, since, NOW.timestamp())
        for at in steps:
            queried = _got(history_job, session, at)
            assert queried and _got(history_job, session, at, history) == queried
            assert _compare(history_job, session, at, history) > 10
