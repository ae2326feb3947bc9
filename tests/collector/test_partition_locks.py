"""PostgreSQL: moving rows out of the default partition beside readers of both tables.

The jobs read `job_outcomes` and `traces` in one transaction; the maintenance makes a
day's partition of each, which takes the default partition's ACCESS EXCLUSIVE lock. Run
by the operator in issue 31, the two deadlocked (a job failed and the maintenance waited
an hour): these tests replay that interleaving, a busier one, and real sharded job runs
beside the maintenance (each of which failed with the old code), on a real server.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, text

from collector.ingest.pipeline import Ingestor, RawMessage
from collector.settings import load_settings
from collector.store import partitions
from collector.store.maintenance import make_partitions
from collector.store.session import make_engine, make_session_factory
from tests.collector.traces import make_trace

NOW = datetime.now(UTC).replace(microsecond=0)


@pytest.fixture
def pg(postgres_url: str) -> Iterator[Engine]:
    engine = make_engine(postgres_url)
    yield engine
    engine.dispose()


def _waiting_days(engine: Engine, days: list[datetime]) -> None:
    """A trace and an outcome for each of `days`, both in their default partitions."""
    ingestor = Ingestor(load_settings(sampling={"real_users_benchmark": 1.0}))
    messages = []
    for i, at in enumerate(days):
        record = make_trace(i) | {"trace_id": f"late-{i}", "timestamp": at.isoformat()}
        value = json.dumps(record, ensure_ascii=False).encode()
        messages.append(RawMessage("rag.traces", 0, i, None, value))
    with make_session_factory(engine)() as session:
        ingestor.ingest_batch(session, messages)
        for i, at in enumerate(days):
            session.execute(
                text(
                    "INSERT INTO job_outcomes (job, trace_id, trace_updated_at, ts, outcomes) "
                    "VALUES ('j', :t, :at, :at, '{}')"
                ),
                {"t": f"late-{i}", "at": at},
            )
        session.commit()
    with engine.connect() as conn:
        for table in partitions.PARTITIONED:
            default = partitions.default_name(table)
            held = conn.execute(text(f"SELECT count(*) FROM {default}")).scalar_one()
            assert held == len(days)


def _in_day_partitions(engine: Engine, days: list[datetime]) -> bool:
    with engine.connect() as conn:
        return all(
            set(partitions.partitions(conn, table)) >= {d.date() for d in days}
            and conn.execute(
                text(f"SELECT count(*) FROM {partitions.default_name(table)}")
            ).scalar_one()
            == 0
            for table in partitions.PARTITIONED
        )


def _someone_waits_for_a_lock(engine: Engine, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    with engine.connect() as conn:
        while time.monotonic() < deadline:
            # this database's locks only: pg_locks is the whole server's, and the other
            # test workers' waits there would end this wait before the maintenance queued
            waiting = conn.execute(
                text(
                    "SELECT count(*) FROM pg_locks WHERE NOT granted AND database = "
                    "(SELECT oid FROM pg_database WHERE datname = current_database())"
                )
            )
            if waiting.scalar_one():
                return
            conn.rollback()
            time.sleep(0.02)
    raise AssertionError("the maintenance never waited for the reader's lock")


def _maintain_in_background(engine: Engine, errors: list[BaseException]) -> threading.Thread:
    def run() -> None:
        try:
            make_partitions(engine, NOW, ahead=1)
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_reader_of_outcomes_then_traces_does_not_deadlock_with_a_move(pg: Engine) -> None:
    day = NOW - timedelta(days=20)
    _waiting_days(pg, [day])
    bounds = {"lo": day - timedelta(hours=1), "hi": day + timedelta(hours=1)}
    errors: list[BaseException] = []
    with pg.connect() as reader:
        # a job's transaction: it has read the outcomes (their default partition included)...
        outcomes = reader.execute(
            text("SELECT count(*) FROM job_outcomes WHERE ts >= :lo AND ts < :hi"), bounds
        ).scalar_one()
        maintenance = _maintain_in_background(pg, errors)
        _someone_waits_for_a_lock(pg)  # ...the maintenance queues for that partition...
        # ...and the job reads the traces: before the fix, the maintenance held the traces'
        # default partition by now, waiting for ours: a deadlock, one of the two aborted.
        traces = reader.execute(
            text("SELECT count(*) FROM traces WHERE timestamp >= :lo AND timestamp < :hi"),
            bounds,
        ).scalar_one()
        reader.commit()
    maintenance.join(60)
    assert (outcomes, traces) == (1, 1)
    assert errors == []
    assert _in_day_partitions(pg, [day])


def test_readers_in_a_loop_go_on_while_past_days_move(pg: Engine) -> None:
    days = [NOW - timedelta(days=n) for n in range(10, 16)]
    _waiting_days(pg, days)
    stop = threading.Event()
    reader_errors: list[BaseException] = []
    reads = [0]

    def read(first: str, second: str) -> None:
        try:
            with pg.connect() as conn:
                while not stop.is_set():
                    for table in (first, second):
                        conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one()
                        time.sleep(0.005)  # hold the first table's locks a moment
                    conn.commit()
                    reads[0] += 1
        except BaseException as exc:
            reader_errors.append(exc)

    readers = [
        threading.Thread(target=read, args=order, daemon=True)
        for order in [("job_outcomes", "traces"), ("traces", "job_outcomes")] * 2
    ]
    for thread in readers:
        thread.start()
    errors: list[BaseException] = []
    maintenance = _maintain_in_background(pg, errors)
    maintenance.join(120)
    stop.set()
    for thread in readers:
        thread.join(10)
    assert reader_errors == [] and errors == []
    assert reads[0] > 0
    assert _in_day_partitions(pg, days)


def test_a_table_kept_busy_waits_for_the_next_pass_and_the_other_goes_on(pg: Engine) -> None:
    day = NOW - timedelta(days=30)
    _waiting_days(pg, [day])
    outcomes_day = partitions.partition_name("job_outcomes", day.date())
    traces_day = partitions.partition_name("traces", day.date())
    with pg.connect() as reader:
        reader.execute(text("SELECT count(*) FROM traces")).scalar_one()  # held until commit
        made = make_partitions(pg, NOW, ahead=1, tries=2)
        assert outcomes_day in made and traces_day not in made  # no error, no hour lost
        reader.commit()
    assert traces_day in make_partitions(pg, NOW, ahead=1, tries=2)
    assert _in_day_partitions(pg, [day])


def test_sharded_jobs_running_beside_the_maintenance_do_not_fail(postgres_url: str) -> None:
    from collector.jobs.scheduler import build_runner
    from ragpulse.job_setup import job_environment
    from tests.jobs.helpers import add_trace

    engine = make_engine(postgres_url)
    days = [NOW - timedelta(days=n, minutes=1) for n in range(2, 7)]  # in the 7d window
    with make_session_factory(engine)() as session:
        for n, at in enumerate([NOW - timedelta(minutes=5), *days] * 40):
            add_trace(
                session,
                f"b{n}",
                at - timedelta(seconds=n),
                purposes=("real_users_benchmark",),
                contexts=[{"id": "d1"}, {"id": "d2"}],
                relevant_ids=["d1" if n % 3 else "d2"],
            )
        session.commit()
    settings = load_settings(
        database={"url": postgres_url},
        scheduler={"shards": 4, "shard_start_grace_s": 0},
        alerting={"enabled": False},
    )
    runners = [
        build_runner(
            settings, engine, job_environment(settings, engine), names=["real_users_benchmark"]
        )
        for _ in range(2)
    ]
    assert all(r.sharding is not None for r in runners)
    runners[0].run_many()  # the waiting days' outcomes now wait in their default partition too
    stop = threading.Event()
    statuses: list[str] = []

    def work(runner: Any) -> None:
        while not stop.is_set():
            statuses.extend(r.status for r in runner.run_many())

    threads = [threading.Thread(target=work, args=(r,), daemon=True) for r in runners]
    try:
        for thread in threads:
            thread.start()
        time.sleep(0.5)
        made = make_partitions(engine, NOW, ahead=1)
        time.sleep(0.5)
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
        for runner in runners:
            runner.close()
    try:
        assert {partitions.partition_name("traces", d.date()) for d in days} <= set(made)
        assert _in_day_partitions(engine, days)
        assert statuses and set(statuses) == {"ok"}, statuses
    finally:
        engine.dispose()
