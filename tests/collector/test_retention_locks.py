"""PostgreSQL: retention dropping an expired day's partitions beside readers of that day.

Detaching a partition takes ACCESS EXCLUSIVE locks on the table, the partition and the
default partition, so a job (or `ragpulse explain`, a backfill) still reading the day
that just expired holds it up. Retention waits at most `partitions.LOCK_TIMEOUT` for
those locks (readers that come meanwhile queue no longer than that), never waits while
holding a lock a reader could be queueing for (no deadlock that could abort the reader),
tries again with growing pauses, and leaves a day that stays busy for the next pass
(`RetentionReport.busy`): the same regime as the making of partitions
(`tests/collector/test_partition_locks.py`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Connection, Engine, text

from collector.store import partitions
from collector.store.maintenance import make_partitions
from collector.store.retention import RetentionReport, expire
from collector.store.session import make_engine
from tests.collector.test_partition_locks import _waiting_days

pytestmark = pytest.mark.timeout(60)  # a retention that waited for ever fails, not hangs
NOW = datetime.now(UTC).replace(microsecond=0)
OLD = NOW - timedelta(days=40)
CUTOFF = NOW - timedelta(days=30)
LOCK_TIMEOUT_S = float(partitions.LOCK_TIMEOUT.removesuffix("s"))


@pytest.fixture
def pg(postgres_url: str) -> Iterator[Engine]:
    """A database with a trace and an outcome in their own partitions of a day that has
    expired (`OLD`, before `CUTOFF`)."""
    engine = make_engine(postgres_url)
    _waiting_days(engine, [OLD])
    make_partitions(engine, NOW, ahead=1)
    with engine.connect() as conn:
        for table in partitions.PARTITIONED:
            assert OLD.date() in partitions.partitions(conn, table)
    yield engine
    engine.dispose()


def _names(table: str) -> str:
    return partitions.partition_name(table, OLD.date())


def _read_the_day(conn: Connection, table: str) -> int:
    """A job's read of the expired day: the table bounded to it (the planner locks the
    table and that day's partition in ACCESS SHARE mode, held until the commit)."""
    key = partitions.PARTITIONED[table]
    bounds = {"lo": OLD - timedelta(hours=1), "hi": OLD + timedelta(hours=1)}
    sql = f"SELECT count(*) FROM {table} WHERE {key} >= :lo AND {key} < :hi"
    return int(conn.execute(text(sql), bounds).scalar_one())


def _expire_in_background(
    engine: Engine, out: list[RetentionReport | BaseException], **kw: int
) -> threading.Thread:
    def run() -> None:
        try:
            out.append(expire(engine, CUTOFF, **kw))
        except BaseException as exc:  # reported by the test
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _retention_waits(engine: Engine, timeout_s: float = 10.0) -> None:
    """Until some backend other than ours waits for a lock (the retention's DDL)."""
    deadline = time.monotonic() + timeout_s
    with engine.connect() as conn:
        while time.monotonic() < deadline:
            waiting = conn.execute(
                text("SELECT count(*) FROM pg_locks WHERE NOT granted AND pid <> pg_backend_pid()")
            ).scalar_one()
            conn.rollback()
            if waiting:
                return
            time.sleep(0.01)
    raise AssertionError("the retention never waited for the reader's lock")


def test_a_day_read_all_along_is_left_for_the_next_pass(pg: Engine) -> None:
    with pg.connect() as reader:
        assert _read_the_day(reader, "traces") == 1  # held until the commit below
        started = time.monotonic()
        report = expire(pg, CUTOFF, tries=2)
        took = time.monotonic() - started
        assert _read_the_day(reader, "traces") == 1  # the reader goes on, unharmed
        reader.commit()
    # the outcomes' day was free; the traces' stayed busy: no error, left for the next pass
    assert report.dropped == [_names("job_outcomes")]
    assert report.busy == [_names("traces")]
    assert (report.traces, report.outcomes) == (0, 1)
    assert took < 2 * LOCK_TIMEOUT_S + 0.5 + 5  # two waits of the timeout and one pause
    again = expire(pg, CUTOFF, tries=2)
    assert again.dropped == [_names("traces")] and again.busy == []
    assert again.traces == 1
    with pg.connect() as conn:
        assert OLD.date() not in partitions.partitions(conn, "traces")
        assert conn.execute(text("SELECT count(*) FROM trace_keys")).scalar_one() == 0


def test_readers_are_never_blocked_longer_than_the_timeout(pg: Engine) -> None:
    # A job holds the expired day for four lock timeouts; meanwhile other transactions
    # read both tables again and again (the other jobs' window queries). Each queues behind
    # the retention's request for the table's lock, but at most a lock timeout: without it
    # they would wait for the first job to end.
    errors: list[BaseException] = []
    out: list[RetentionReport | BaseException] = []
    slowest = 0.0
    reads = 0
    with pg.connect() as holder, pg.connect() as other:
        # a read blocked past this fails (rather than wait for the holder, i.e. forever)
        other.execute(text("SET statement_timeout = '3s'"))
        other.commit()
        assert _read_the_day(holder, "traces") == 1
        retention = _expire_in_background(pg, out, tries=8)
        _retention_waits(pg)  # queued behind the holder for the table's lock
        held_until = time.monotonic() + 4 * LOCK_TIMEOUT_S
        try:
            while time.monotonic() < held_until:
                for table in ("job_outcomes", "traces"):
                    t0 = time.monotonic()
                    other.execute(text(f"SELECT count(*) FROM {table}")).scalar_one()
                    other.commit()
                    slowest = max(slowest, time.monotonic() - t0)
                    reads += 1
                time.sleep(0.02)
            assert _read_the_day(holder, "traces") == 1  # the day is still there for it
        except BaseException as exc:
            errors.append(exc)
        holder.commit()
    retention.join(60)
    assert errors == [] and reads > 4
    assert slowest < LOCK_TIMEOUT_S + 1.0, slowest
    _assert_dropped_on_a_later_try(pg, out)


def _assert_dropped_on_a_later_try(pg: Engine, out: list[RetentionReport | BaseException]) -> None:
    (report,) = out
    assert isinstance(report, RetentionReport), report
    # the tries (pauses 0.5, 1, 2, 4 s...) outlast the reader
    assert set(report.dropped) == {_names("traces"), _names("job_outcomes")}
    assert report.busy == [] and report.traces == 1
    with pg.connect() as conn:
        for table in partitions.PARTITIONED:
            assert OLD.date() not in partitions.partitions(conn, table)


def test_a_reader_of_the_partition_itself_is_not_aborted_to_end_a_deadlock(pg: Engine) -> None:
    # Reader A reads the expired day's partition directly (its only lock); reader B reads
    # the table. Retention queues for the table's lock behind B, and A's next read of the
    # table queues behind retention. B commits: retention gets the table. Had it then
    # waited for the partition (held by A, who waits for the table), A, waiting longer,
    # would be the one PostgreSQL's deadlock check aborts.
    out: list[RetentionReport | BaseException] = []
    a_result: list[int | BaseException] = []
    with pg.connect() as a, pg.connect() as b:
        assert a.execute(text(f"SELECT count(*) FROM {_names('traces')}")).scalar_one() == 1
        assert _read_the_day(b, "traces") == 1
        retention = _expire_in_background(pg, out, tries=8)
        _retention_waits(pg)  # for the table, behind B

        def read_the_table() -> None:
            try:
                a_result.append(_read_the_day(a, "traces"))
            except BaseException as exc:
                a_result.append(exc)

        reading = threading.Thread(target=read_the_table, daemon=True)
        started = time.monotonic()
        reading.start()
        time.sleep(0.3)  # A queued behind retention (well inside its lock timeout)
        b.commit()
        reading.join(30)
        took = time.monotonic() - started
        assert a_result == [1], a_result  # not aborted, and the day still there
        assert took < LOCK_TIMEOUT_S + 1.0, took
        time.sleep(LOCK_TIMEOUT_S)  # A goes on holding the partition a while
        a.commit()
    retention.join(60)
    _assert_dropped_on_a_later_try(pg, out)
