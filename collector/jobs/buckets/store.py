"""Reading and writing a job's per-minute bucket sums (`job_buckets`, rev. 0014) and the
DDSketch bins of its quantile metrics (`job_bucket_bins`, rev. 0015).

`apply` adds summed `Changes` (`contributions`) in the caller's transaction: one upsert
per changed row that adds to what is stored (`n = n + excluded.n`, ...), in key order,
the sums' table before the bins', then deletes the rows it emptied (a bin whose count
reaches 0 goes too). Concurrent workers (sharded jobs) lock the rows they change in the
same order, so they wait for each other but never deadlock, and never need each other's
rows.

`window_sums` gives the sums of the traces with ts in [start, end] exactly: the buckets
inside, minus the stored outcomes of the two edge buckets that fall outside (at most two
minutes of one job's rows, read from `job_outcomes`); `window_bins` the bins alike, from
the same edge rows (`window_source.Edges`). `rebuild` recomputes a job's buckets and bins
from `job_outcomes` in bounded chunks (an upgrade, or after a manual repair).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Text, and_, bindparam, cast, delete, exists, func, or_, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from collector.jobs.buckets.contributions import Changes, Contributions
from collector.jobs.buckets.stats import BUCKET_S, SCORED, Key, Sums, bucket_of
from collector.jobs.outcomes.codec import read_groups, read_outcomes
from collector.store.models import JobBucket, JobBucketBin, JobOutcome

logger = logging.getLogger(__name__)

WindowSums = dict[tuple[str, str, str], Sums]
"""(metric, group key, outcome) -> the sums of a window."""
WindowBins = dict[tuple[str, str], dict[int, int]]
"""(metric, group key) -> bin -> how many of the window's scored values fell in it."""

SUM_COLUMNS = ("n", "total", "squares", "positives", "log_total", "log_squares")
_BATCH = 5_000


def _ts(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def _epoch(ts: datetime) -> float:
    return (ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)).timestamp()


@dataclass(frozen=True)
class _Added:
    """A table of per-minute counts and sums that writers add to."""

    name: str
    model: Any
    key: tuple[str, ...]
    columns: tuple[str, ...]
    """The summed columns; the first, `n`, is a count: a row whose `n` reaches 0 goes."""
    stage: str
    """The staging table's columns (PostgreSQL's COPY path)."""


_SUMS = _Added(
    "job_buckets",
    JobBucket,
    ("job", "bucket", "metric", "grp", "outcome"),
    SUM_COLUMNS,
    "job text, bucket bigint, metric text, grp text, outcome text, n bigint, total float8, "
    "squares float8, positives bigint, log_total float8, log_squares float8",
)
_BINS = _Added(
    "job_bucket_bins",
    JobBucketBin,
    ("job", "bucket", "metric", "grp", "bin"),
    ("n",),
    "job text, bucket bigint, metric text, grp text, bin integer, n bigint",
)


def apply(session: Session, job: str, changes: Changes) -> int:
    """Add `changes` to the job's stored bucket sums and bins (the caller commits), the
    sums first (every writer locks in this order). Rows changed."""
    sums = [
        {
            "job": job,
            "metric": metric,
            "grp": grp,
            "bucket": bucket,
            "outcome": outcome,
            **{c: getattr(part, c) for c in SUM_COLUMNS},
        }
        for (metric, grp, bucket, outcome), part in changes.items()
    ]
    bins = [
        {"job": job, "metric": metric, "grp": grp, "bucket": bucket, "bin": index, "n": count}
        for (metric, grp, bucket, index), count in changes.bin_items()
    ]
    return _add(session, _SUMS, job, sums) + _add(session, _BINS, job, bins)


def _add(session: Session, table: _Added, job: str, rows: list[dict[str, Any]]) -> int:
    """Add `rows` to `table`: one upsert per row adding to what is stored, in key order,
    then the rows emptied deleted."""
    if not rows:
        return 0
    bind = session.get_bind()
    if bind.dialect.name == "postgresql" and bind.dialect.driver == "psycopg":
        _copy_add(session, table, rows)
        return len(rows)
    insert = postgresql.insert if bind.dialect.name == "postgresql" else sqlite.insert
    stmt = insert(table.model)
    stored = table.model.__table__.c
    stmt = stmt.on_conflict_do_update(
        index_elements=list(table.key),
        set_={c: stored[c] + stmt.excluded[c] for c in table.columns},
    )
    for start in range(0, len(rows), _BATCH):
        session.execute(stmt, rows[start : start + _BATCH])
    parts = table.key[1:]
    emptied = [{f"b_{c}": r[c] for c in parts} for r in rows if r["n"] < 0]
    if emptied:
        session.execute(
            delete(table.model.__table__).where(
                stored.job == job, *(stored[c] == bindparam(f"b_{c}") for c in parts), stored.n <= 0
            ),
            emptied,
        )
    return len(rows)


def _copy_add(session: Session, table: _Added, rows: list[dict[str, Any]]) -> None:
    """PostgreSQL: COPY the changes into a temporary table, add them with one INSERT ...
    SELECT ... ON CONFLICT in key order (the lock order every writer shares), then delete
    the rows they emptied: a backlog's run touches a row per metric, group and minute of
    its traces (and per bin), ~10x faster than one statement per row."""
    raw: Any = session.connection().connection.driver_connection
    stage = f"ragpulse_{table.name}_in"
    columns = (*table.key, *table.columns)
    names = ", ".join(columns)
    key = ", ".join(table.key)
    with raw.cursor() as cur:
        cur.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {stage} ({table.stage}) ON COMMIT DELETE ROWS"
        )
        with cur.copy(f"COPY {stage} ({names}) FROM STDIN") as copy:
            for r in rows:
                copy.write_row(tuple(r[c] for c in columns))
        updates = ", ".join(f"{c} = {table.name}.{c} + excluded.{c}" for c in table.columns)
        cur.execute(
            f"INSERT INTO {table.name} ({names}) SELECT {names} FROM {stage} ORDER BY {key} "
            f"ON CONFLICT ({key}) DO UPDATE SET {updates}"
        )
        match = " AND ".join(f"b.{c} = s.{c}" for c in table.key)
        cur.execute(f"DELETE FROM {table.name} b USING {stage} s WHERE {match} AND b.n <= 0")
        cur.execute(f"DELETE FROM {stage}")


def _stored_rows(
    session: Session, job: str, *where: Any, chunk: int | None = None
) -> Iterator[tuple[float, Any, dict[str, Any]]]:
    """(ts, groups, outcomes) of the job's stored outcomes matching `where`, decoded;
    `chunk`: streamed that many rows at a time."""
    query = select(
        JobOutcome.ts, cast(JobOutcome.groups, Text), cast(JobOutcome.outcomes, Text)
    ).where(JobOutcome.job == job, *where)
    if chunk is not None:
        query = query.execution_options(yield_per=chunk)
    for ts, groups, outcomes in session.connection().execute(query):
        yield (
            _epoch(ts),
            read_groups(groups),
            read_outcomes(outcomes),
        )


def _rows_changes(session: Session, job: str, *where: Any) -> Changes:
    """The contributions of the job's stored outcomes matching `where` (ts bounds)."""
    gathered = Contributions()
    for ts, groups, outcomes in _stored_rows(session, job, *where):
        gathered.add(ts, groups, outcomes)
    return gathered.changes()


Edge = tuple[Changes, ...]
"""The contributions of a window's edge rows outside it: those in its first minute before
its start, and (when it has an end) those in its last minute after its end."""


def window_sums(
    session: Session, job: str, start: float, end: float | None, edge: Edge | None = None
) -> WindowSums:
    """The sums of the job's traces with start <= ts <= end (None: no upper bound);
    `edge`: the window's `edge_changes`, when the caller has them already."""
    first = bucket_of(start)
    b = JobBucket
    query = (
        select(b.metric, b.grp, b.outcome, *(func.sum(getattr(b, c)) for c in SUM_COLUMNS))
        .where(b.job == job, b.bucket >= first)
        .group_by(b.metric, b.grp, b.outcome)
    )
    if end is not None:
        query = query.where(b.bucket <= bucket_of(end))
    out: WindowSums = {}
    for metric, grp, outcome, *values in session.execute(query):
        out[(metric, grp, outcome)] = Sums(
            int(values[0] or 0),
            float(values[1] or 0.0),
            float(values[2] or 0.0),
            int(values[3] or 0),
            float(values[4] or 0.0),
            float(values[5] or 0.0),
        )
    return subtract(out, edge if edge is not None else edge_changes(session, job, start, end))


def window_bins(
    session: Session, job: str, start: float, end: float, metrics: Sequence[str], edge: Edge
) -> WindowBins:
    """The bins of `metrics`' scored values of the job's traces with start <= ts <= end:
    the minutes' bins summed, less `edge`'s (the window's `edge_changes`)."""
    b = JobBucketBin
    query = (
        select(b.metric, b.grp, b.bin, func.sum(b.n))
        .where(
            b.job == job,
            b.bucket >= bucket_of(start),
            b.bucket <= bucket_of(end),
            b.metric.in_(list(metrics)),
        )
        .group_by(b.metric, b.grp, b.bin)
    )
    out: WindowBins = {}
    for metric, grp, index, count in session.execute(query):
        out.setdefault((metric, grp), {})[int(index)] = int(count or 0)
    for side in edge:
        for (metric, grp, _bucket, index), count in side.bin_items():
            bins = out.get((metric, grp))
            if bins is not None and index in bins:
                bins[index] -= count
    return {key: {i: c for i, c in bins.items() if c > 0} for key, bins in out.items()}


def edge_changes(session: Session, job: str, start: float, end: float | None) -> Edge:
    """The contributions of the stored outcomes in the window's edge buckets but outside
    the window: ts before `start` in its minute, ts after `end` in its minute."""
    head = before_start(session, job, start)
    return (head,) if end is None else (head, after_end(session, job, end))


def before_start(session: Session, job: str, start: float) -> Changes:
    """The stored outcomes in `start`'s minute before it (none, and no query, when the
    window starts on the minute, as a back-fill's steps do)."""
    first = bucket_of(start) * BUCKET_S
    if first >= start:
        return Contributions().changes()
    o = JobOutcome
    return _rows_changes(session, job, o.ts >= _ts(first), o.ts < _ts(start))


def after_end(session: Session, job: str, end: float) -> Changes:
    """The stored outcomes in `end`'s minute after it."""
    o = JobOutcome
    return _rows_changes(session, job, o.ts > _ts(end), o.ts < _ts((bucket_of(end) + 1) * BUCKET_S))


def after_ends(session: Session, job: str, ends: Sequence[float]) -> dict[float, Changes]:
    """`after_end` of each of `ends` by one query (a back-fill's steps, a batch at a time)."""
    gathered = {end: Contributions() for end in ends}
    if ends:
        o = JobOutcome
        in_minute: dict[int, list[float]] = {}
        for end in gathered:
            in_minute.setdefault(bucket_of(end), []).append(end)
        after = [
            and_(o.ts > _ts(end), o.ts < _ts((bucket_of(end) + 1) * BUCKET_S)) for end in gathered
        ]
        for ts, groups, outcomes in _stored_rows(session, job, or_(*after)):
            for end in in_minute.get(bucket_of(ts), ()):
                if ts > end:
                    gathered[end].add(ts, groups, outcomes)
    return {end: contributions.changes() for end, contributions in gathered.items()}


def subtract(sums: WindowSums, edge: Edge) -> WindowSums:
    """`sums` less the `edge` contributions (whatever their bucket), empty series left out:
    the sides' sums added per key (a window within one minute has both in it), then taken
    off in key order."""
    merged: dict[Key, Sums] = {}
    for side in edge:
        for key, part in side.items():
            into = merged.setdefault(key, Sums())
            for c in SUM_COLUMNS:
                setattr(into, c, getattr(into, c) + getattr(part, c))
    for (metric, grp, _bucket, outcome), part in sorted(merged.items()):
        if part.empty():
            continue
        into = sums.setdefault((metric, grp, outcome), Sums())
        for c in SUM_COLUMNS:
            setattr(into, c, getattr(into, c) - getattr(part, c))
    return {k: v for k, v in sums.items() if v.n > 0}


def has_buckets(session: Session, job: str, binned: Sequence[str] = ()) -> bool:
    """Whether the job has bucket sums, and bins too if it has scored values of one of
    the `binned` metrics (sums stored before the bins existed, rev. 0015, have none)."""
    if not session.execute(select(exists().where(JobBucket.job == job))).scalar():
        return False
    if not binned or session.execute(select(exists().where(JobBucketBin.job == job))).scalar():
        return True
    b = JobBucket
    scored = exists().where(b.job == job, b.outcome == SCORED, b.metric.in_(list(binned)))
    return not session.execute(select(scored)).scalar()


def analyze(session: Session) -> None:
    """PostgreSQL: refresh the planner's statistics of the sums and bins after a rebuild
    wrote millions of rows at once. Until autovacuum gets to them the planner takes the
    tables for nearly empty: measured at 10M outcomes, the 7-day window's bins (6.3M rows)
    summed in 6.8 s by a sorted aggregate, 1.8 s by the hash aggregate chosen after."""
    if session.get_bind().dialect.name != "postgresql":
        return
    session.execute(text(f"ANALYZE {JobBucket.__tablename__}, {JobBucketBin.__tablename__}"))
    session.commit()


def has_outcomes(session: Session, job: str, since: datetime) -> bool:
    query = exists().where(JobOutcome.job == job, JobOutcome.ts >= since)
    return bool(session.execute(select(query)).scalar())


def rebuild(session: Session, job: str, since: datetime, chunk: int = 20_000) -> int:
    """Recompute the job's buckets and bins from its stored outcomes with ts >= since,
    streaming them `chunk` rows at a time (memory bounded by one chunk's buckets, not by
    the rows); the caller commits. Outcome rows read."""
    session.execute(delete(JobBucket).where(JobBucket.job == job))
    session.execute(delete(JobBucketBin).where(JobBucketBin.job == job))
    read = 0
    gathered = Contributions()
    for ts, groups, outcomes in _stored_rows(session, job, JobOutcome.ts >= since, chunk=chunk):
        gathered.add(ts, groups, outcomes)
        read += 1
        if read % chunk == 0:
            apply(session, job, gathered.changes())
            gathered = Contributions()
    apply(session, job, gathered.changes())
    return read
