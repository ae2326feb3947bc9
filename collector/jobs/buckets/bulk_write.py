"""Adding summed `Changes` (`contributions`) to a job's bucket sums and bins.

PostgreSQL with psycopg: the changes go into a temporary table as numbers only (bucket,
the index of their (metric, group key, outcome) and the sums) in one binary COPY built
by numpy (`copy_binary`), then one INSERT ... SELECT joins the names back from arrays
and adds them in key order, like `bucket_store.apply` (the lock order every writer
shares). A row is emptied, and deleted, only by a change whose count is not positive
(stored rows have n >= 1: every writer deletes those it takes to n <= 0), so the DELETE
runs for those changes only, and not at all for a backlog that only adds traces.
Elsewhere (SQLite): `bucket_store.apply` of the same changes, row by row.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from collector.jobs.buckets import store as bucket_store
from collector.jobs.buckets.contributions import Changes
from collector.jobs.buckets.store import SUM_COLUMNS
from collector.store.copy_binary import binary_copy

_SUMS_STAGE = "ragpulse_job_buckets_codes"
_BINS_STAGE = "ragpulse_job_bucket_bins_codes"
_SUM_TYPES = ("int8", "float8", "float8", "int8", "float8", "float8")


def apply_changes(session: Session, job: str, changes: Changes) -> int:
    """Add `changes` to the job's stored sums and bins (the caller commits), the sums
    first. Rows changed."""
    bind = session.get_bind()
    if bind.dialect.name != "postgresql" or bind.dialect.driver != "psycopg":
        return bucket_store.apply(session, job, changes)
    raw: Any = session.connection().connection.driver_connection
    with raw.cursor() as cur:
        if len(changes):
            _add_sums(cur, job, changes)
        if len(changes.bin_n):
            _add_bins(cur, job, changes)
    return len(changes) + len(changes.bin_n)


def _stage(cur: Any, table: str, columns: list[tuple[str, str, Any]]) -> None:
    """Fill the temporary table `table` with the (name, type, array) `columns` by one
    binary COPY (created for the session the first time, emptied at commit)."""
    cur.execute(
        f"CREATE TEMP TABLE IF NOT EXISTS {table} ("
        + ", ".join(f"{name} {kind}" for name, kind, _ in columns)
        + ") ON COMMIT DELETE ROWS"
    )
    data = binary_copy([(kind, values) for _, kind, values in columns])
    names = ", ".join(name for name, _, _ in columns)
    with cur.copy(f"COPY {table} ({names}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.write(data)


def _add_sums(cur: Any, job: str, changes: Changes) -> None:
    columns = ", ".join(SUM_COLUMNS)
    _stage(
        cur,
        _SUMS_STAGE,
        [("bucket", "int8", changes.bucket), ("series", "int4", changes.series)]
        + [(c, t, getattr(changes, c)) for c, t in zip(SUM_COLUMNS, _SUM_TYPES, strict=True)],
    )
    names = {
        "job": job,
        "metric": [m for m, _, _ in changes.names],
        "grp": [g for _, g, _ in changes.names],
        "outcome": [o for _, _, o in changes.names],
    }
    series = (
        "unnest(%(metric)s::text[], %(grp)s::text[], %(outcome)s::text[]) "
        "WITH ORDINALITY AS k(metric, grp, outcome, i)"
    )
    updates = ", ".join(f"{c} = job_buckets.{c} + excluded.{c}" for c in SUM_COLUMNS)
    cur.execute(
        f"INSERT INTO job_buckets (job, bucket, metric, grp, outcome, {columns}) "
        f"SELECT %(job)s, s.bucket, k.metric, k.grp, k.outcome, "
        + ", ".join(f"s.{c}" for c in SUM_COLUMNS)
        + f" FROM {_SUMS_STAGE} s JOIN {series} ON k.i = s.series + 1 "
        "ORDER BY s.bucket, k.metric, k.grp, k.outcome "
        f"ON CONFLICT (job, bucket, metric, grp, outcome) DO UPDATE SET {updates}",
        names,
    )
    if (changes.n <= 0).any():
        cur.execute(
            f"DELETE FROM job_buckets b USING {_SUMS_STAGE} s, {series} "
            "WHERE k.i = s.series + 1 AND s.n <= 0 AND b.job = %(job)s "
            "AND b.bucket = s.bucket AND b.metric = k.metric AND b.grp = k.grp "
            "AND b.outcome = k.outcome AND b.n <= 0",
            names,
        )
    cur.execute(f"DELETE FROM {_SUMS_STAGE}")


def _add_bins(cur: Any, job: str, changes: Changes) -> None:
    _stage(
        cur,
        _BINS_STAGE,
        [
            ("bucket", "int8", changes.bin_bucket),
            ("series", "int4", changes.bin_series),
            ("bin", "int4", changes.bin_index),
            ("n", "int8", changes.bin_n),
        ],
    )
    names = {
        "job": job,
        "metric": [m for m, _ in changes.bin_names],
        "grp": [g for _, g in changes.bin_names],
    }
    series = "unnest(%(metric)s::text[], %(grp)s::text[]) WITH ORDINALITY AS k(metric, grp, i)"
    cur.execute(
        "INSERT INTO job_bucket_bins (job, bucket, metric, grp, bin, n) "
        f"SELECT %(job)s, s.bucket, k.metric, k.grp, s.bin, s.n FROM {_BINS_STAGE} s "
        f"JOIN {series} ON k.i = s.series + 1 ORDER BY s.bucket, k.metric, k.grp, s.bin "
        "ON CONFLICT (job, bucket, metric, grp, bin) "
        "DO UPDATE SET n = job_bucket_bins.n + excluded.n",
        names,
    )
    if (changes.bin_n <= 0).any():
        cur.execute(
            f"DELETE FROM job_bucket_bins b USING {_BINS_STAGE} s, {series} "
            "WHERE k.i = s.series + 1 AND s.n <= 0 AND b.job = %(job)s AND b.bucket = s.bucket "
            "AND b.metric = k.metric AND b.grp = k.grp AND b.bin = s.bin AND b.n <= 0",
            names,
        )
    cur.execute(f"DELETE FROM {_BINS_STAGE}")
