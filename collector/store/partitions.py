"""PostgreSQL: `traces` and `job_outcomes` as daily range partitions, made ahead and dropped.

Layout (rev. 0011): `traces` is partitioned by `timestamp` and `job_outcomes` by `ts` (the
trace's timestamp, so a trace and its outcomes live in partitions of the same day), one
partition per UTC day named `<table>_pYYYYMMDD`, plus a DEFAULT partition `<table>_default`
that catches rows no daily partition covers (a far-past or far-future timestamp, or a
day not made yet). The jobs' queries bound the timestamp, so the planner reads only the
partitions of their window; retention drops whole days instead of deleting rows.

`ensure_partitions` makes the partitions of the coming days (the scheduler's storage
maintenance, every hour, and `ragpulse migrate`), and of past days whose rows wait in the
default partition (`waiting_days`: traces that arrived late, or a replay of old traffic).
PostgreSQL refuses a new partition while the default partition holds rows of its range,
so those rows are moved in the same transaction: taken out of the default partition into
a temporary table, the partition created (as a plain table, then ATTACHed: that locks
the parent only in SHARE UPDATE EXCLUSIVE mode, so reads and inserts go on), and the rows
inserted again through the parent (whose triggers claim their keys again). The default
partition's ACCESS EXCLUSIVE lock (which ATTACH needs) is taken first, before anything is
read or deleted, so the transaction never holds a weaker lock while it queues for a
stronger one, and the service makes one table's partition per transaction
(`collector/store/maintenance.py`): it then never holds one table's default partition while
waiting for the other's, the cycle with a job's transaction reading both tables that
deadlocked in issue 31. `drop_partition`
deletes what hangs off a day's traces (their keys in `trace_keys`, samples, feedback,
labels, evaluation events, judgments), then detaches and drops the partition, taking the
DETACH's locks in an order that never waits while holding one a reader could queue for
(`_lock_to_detach`). The
service's maintenance waits at most `LOCK_TIMEOUT` for the DDL's locks
(`limit_lock_wait`; readers queue behind it no longer than that) and tries a busy table
again a little later (`is_lock_conflict`, `collector/store/lock_retry.py`): the making of
partitions and the retention alike.

Nothing here commits: each function runs in the caller's transaction (one per partition
keeps a failure from undoing the others).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime, timedelta
from types import MappingProxyType

from sqlalchemy import Connection, text
from sqlalchemy.exc import OperationalError

PARTITIONED: Mapping[str, str] = MappingProxyType({"traces": "timestamp", "job_outcomes": "ts"})
"""Partitioned table -> its partition key (a timestamptz column)."""

DEPENDENTS = ("samples", "feedback", "human_labels", "evaluation_events", "judgments")
"""Tables whose rows belong to a trace (by `trace_id`): deleted with it."""

DAY = timedelta(days=1)
LOCK_TIMEOUT = "1s"
_LOCK_CONFLICTS = frozenset({"55P03", "40P01"})  # lock_not_available, deadlock_detected
_NAME = re.compile(r"^(?P<table>[a-z_]+)_p(?P<day>\d{8})$")


class PartitionError(RuntimeError):
    """A partitioning operation was asked of a table that is not partitioned."""


def partition_name(table: str, day: date) -> str:
    return f"{table}_p{day:%Y%m%d}"


def default_name(table: str) -> str:
    return f"{table}_default"


def day_start(day: date) -> datetime:
    """The first instant of a UTC day (a partition's lower bound)."""
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def utc_day(at: datetime) -> date:
    return at.astimezone(UTC).date()


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def limit_lock_wait(conn: Connection) -> None:
    """Make the transaction's statements give up after `LOCK_TIMEOUT` waiting for a lock
    (the service's maintenance: a busy table is tried again next time, rather than
    queueing every reader and writer behind the DDL's lock)."""
    conn.execute(text(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'"))


def is_lock_conflict(exc: BaseException) -> bool:
    """Whether `exc` is PostgreSQL giving up on a lock (`LOCK_TIMEOUT` passed, or a
    deadlock it broke): the work can be tried again once the other transaction is done."""
    return isinstance(exc, OperationalError) and (
        getattr(exc.orig, "sqlstate", None) in _LOCK_CONFLICTS
    )


_LAYOUT = "ragpulse.partitioned"


def partitioned_layout(conn: Connection) -> bool:
    """Whether the database has the partitioned layout of rev. 0011 (PostgreSQL with
    `trace_keys`); looked up once per database connection. The writers follow it, so a
    PostgreSQL database still at the plain layout is written as before."""
    if conn.dialect.name != "postgresql":
        return False
    found = conn.info.get(_LAYOUT)
    if found is None:
        found = conn.execute(text("SELECT to_regclass('trace_keys') IS NOT NULL")).scalar_one()
        conn.info[_LAYOUT] = found
    return bool(found)


def is_partitioned(conn: Connection, table: str) -> bool:
    """Whether `table` is a partitioned table (False on SQLite)."""
    if conn.dialect.name != "postgresql":
        return False
    found = conn.execute(
        text(
            "SELECT 1 FROM pg_partitioned_table p JOIN pg_class c ON c.oid = p.partrelid "
            "WHERE c.relname = :table AND pg_table_is_visible(c.oid)"
        ),
        {"table": table},
    ).first()
    return found is not None


def partitions(conn: Connection, table: str) -> dict[date, str]:
    """The daily partitions of `table`: day -> partition name (the default left out)."""
    rows = conn.execute(
        text(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = CAST(:table AS regclass)"
        ),
        {"table": table},
    ).scalars()
    out = {}
    for name in rows:
        match = _NAME.match(name)
        if match and match["table"] == table:
            out[datetime.strptime(match["day"], "%Y%m%d").date()] = name
    return out


def create_default_partition(conn: Connection, table: str) -> None:
    conn.execute(
        text(
            f"CREATE TABLE IF NOT EXISTS {_quote(default_name(table))} PARTITION OF {table} DEFAULT"
        )
    )


def create_partition(conn: Connection, table: str, day: date) -> bool:
    """Make `table`'s partition of `day`, moving that day's rows out of the default
    partition; False when it exists already."""
    if table not in PARTITIONED:
        raise PartitionError(f"{table} is not a partitioned table ({', '.join(PARTITIONED)})")
    name = partition_name(table, day)
    if day in partitions(conn, table):
        return False
    key = _quote(PARTITIONED[table])
    bounds = {"lo": day_start(day), "hi": day_start(day + DAY)}
    default = _quote(default_name(table))
    # ATTACH takes this lock anyway; first, so no weaker one of ours is held while queueing
    conn.execute(text(f"LOCK TABLE {default} IN ACCESS EXCLUSIVE MODE"))
    waiting = conn.execute(
        text(f"SELECT EXISTS (SELECT 1 FROM {default} WHERE {key} >= :lo AND {key} < :hi)"),
        bounds,
    ).scalar_one()
    if waiting:
        conn.execute(text(f"CREATE TEMP TABLE ragpulse_moving (LIKE {table}) ON COMMIT DROP"))
        conn.execute(
            text(
                f"WITH moved AS (DELETE FROM {default} WHERE {key} >= :lo AND {key} < :hi "
                "RETURNING *) INSERT INTO ragpulse_moving SELECT * FROM moved"
            ),
            bounds,
        )
    conn.execute(
        text(
            f"CREATE TABLE {_quote(name)} (LIKE {table} INCLUDING DEFAULTS "
            "INCLUDING COMPRESSION INCLUDING STORAGE)"
        )
    )
    lo, hi = (f"'{bounds[b].isoformat()}'" for b in ("lo", "hi"))
    conn.execute(
        text(
            f"ALTER TABLE {table} ATTACH PARTITION {_quote(name)} FOR VALUES FROM ({lo}) TO ({hi})"
        )
    )
    if waiting:
        # through the parent: its triggers claim the rows' keys again (`trace_keys`)
        conn.execute(text(f"INSERT INTO {table} SELECT * FROM ragpulse_moving"))
        conn.execute(text("DROP TABLE ragpulse_moving"))
    return True


def ensure_partitions(conn: Connection, days: Iterable[date]) -> list[str]:
    """Make the missing partitions of `days` for every partitioned table; their names."""
    made = []
    for table in PARTITIONED:
        if not is_partitioned(conn, table):
            continue
        have = partitions(conn, table)
        for day in sorted(set(days)):
            if day not in have and create_partition(conn, table, day):
                made.append(partition_name(table, day))
    return made


def waiting_days(conn: Connection, table: str, since: datetime, until: datetime) -> list[date]:
    """The UTC days in [since, until) of the rows in `table`'s default partition (a trace
    that arrived before its day's partition was made, e.g. a replay of past traffic)."""
    key = _quote(PARTITIONED[table])
    rows = conn.execute(
        text(
            f"SELECT DISTINCT CAST(({key} AT TIME ZONE 'UTC') AS date) "
            f"FROM {_quote(default_name(table))} WHERE {key} >= :since AND {key} < :until"
        ),
        {"since": since, "until": until},
    ).scalars()
    return sorted(rows)


def coming_days(now: datetime, ahead: int) -> list[date]:
    """Today (UTC) and the `ahead` days after it."""
    today = utc_day(now)
    return [today + i * DAY for i in range(ahead + 1)]


def _delete_hanging(conn: Connection, source: str, where: str, params: Mapping[str, object]) -> int:
    """Delete the dependent rows of the traces in `source` matching `where` (few: looked
    up from each dependent table's side)."""
    deleted = 0
    for table in DEPENDENTS:
        result = conn.execute(
            text(
                f"DELETE FROM {table} x USING {source} t WHERE x.trace_id = t.trace_id AND {where}"
            ),
            dict(params),
        )
        deleted += result.rowcount
    return deleted


def drop_partition(conn: Connection, table: str, day: date) -> int:
    """Detach and drop `table`'s partition of `day` (for `traces`, after deleting what
    hangs off its traces); the number of rows it held."""
    name = _quote(partition_name(table, day))
    rows = int(conn.execute(text(f"SELECT count(*) FROM {name}")).scalar_one())
    if table == "traces":
        _delete_hanging(conn, name, "TRUE", {})
        # by the day's index: no scan of the partition nor of the whole key table
        conn.execute(text("DELETE FROM trace_keys WHERE day = :day"), {"day": day})
    _lock_to_detach(conn, table, day)
    conn.execute(text(f"ALTER TABLE {table} DETACH PARTITION {name}"))
    conn.execute(text(f"DROP TABLE {name}"))
    return rows


def _lock_to_detach(conn: Connection, table: str, day: date) -> None:
    """Take the ACCESS EXCLUSIVE locks DETACH PARTITION needs (the table, the partition and
    the default partition, whose bound widens), so that the transaction never waits while
    holding one of them: the table's first, waiting (the caller's lock timeout) with
    nothing held that a reader queues for (its reads of the day hold the partition in
    ACCESS SHARE mode, compatible with ours); then the partitions with NOWAIT. Every
    reader through the table has finished by then; one that reads a partition directly
    (then the table) could hold it, and waiting for it while holding the table would close
    a cycle that PostgreSQL breaks by aborting one of the two, perhaps the reader."""
    conn.execute(text(f"LOCK TABLE ONLY {table} IN ACCESS EXCLUSIVE MODE"))
    held = [partition_name(table, day), default_name(table)]
    present = [n for n in held if conn.execute(text("SELECT to_regclass(:n)"), {"n": n}).scalar()]
    names = ", ".join(_quote(n) for n in present)
    conn.execute(text(f"LOCK TABLE {names} IN ACCESS EXCLUSIVE MODE NOWAIT"))


def expire_default(conn: Connection, table: str, cutoff: datetime) -> int:
    """Delete the default partition's rows older than `cutoff` (few: out-of-range
    timestamps), and for `traces` what hangs off them (their keys go by the trigger);
    the number of rows deleted."""
    default = _quote(default_name(table))
    key = _quote(PARTITIONED[table])
    if table == "traces":
        _delete_hanging(conn, default, f"t.{key} < :cutoff", {"cutoff": cutoff})
    result = conn.execute(text(f"DELETE FROM {default} WHERE {key} < :cutoff"), {"cutoff": cutoff})
    return int(result.rowcount)


def expired_days(conn: Connection, table: str, cutoff: datetime) -> list[date]:
    """The days of `table`'s partitions that end at or before `cutoff`."""
    return sorted(d for d in partitions(conn, table) if day_start(d + DAY) <= cutoff)
