"""Partitioned storage (issue 21): one row per trace id across daily partitions, partitions
made ahead (rows waiting in the default partition moved in), retention that drops whole
days with what hangs off them, and the migration there and back."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Engine, select, text
from sqlalchemy.orm import Session

from collector.ingest.pipeline import Ingestor, RawMessage
from collector.jobs.outcomes.store import upsert_outcomes
from collector.settings import load_settings
from collector.store import partitions
from collector.store.maintenance import MaintenanceReport, StorageMaintenance, make_partitions
from collector.store.models import JobOutcome
from collector.store.retention import RetentionReport, expire
from collector.store.session import make_engine, make_session_factory
from migrations.runner import alembic_config, upgrade
from tests.collector.traces import make_trace
from tests.fixtures.db import create_postgres_database, drop_postgres_database

NOW = datetime.now(UTC).replace(microsecond=0)


@pytest.fixture
def pg(postgres_url: str) -> Iterator[Engine]:
    engine = make_engine(postgres_url)
    yield engine
    engine.dispose()


def _trace(trace_id: str, at: datetime, **fields: Any) -> RawMessage:
    record = make_trace(0) | {"trace_id": trace_id, "timestamp": at.isoformat(), **fields}
    value = json.dumps(record, ensure_ascii=False).encode()
    return RawMessage("rag.traces", 0, 0, None, value)


def _ingest(engine: Engine, *messages: RawMessage) -> Any:
    ingestor = Ingestor(load_settings(sampling={"real_users_benchmark": 1.0, "judge": 1.0}))
    with make_session_factory(engine)() as session:
        result = ingestor.ingest_batch(session, list(messages))
        session.commit()
    return result


def _where(engine: Engine, trace_id: str) -> list[tuple[str, datetime]]:
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT tableoid::regclass::text, timestamp FROM traces WHERE trace_id = :t"),
            {"t": trace_id},
        )
        return [(name, ts) for name, ts in rows]


def test_a_trace_sent_again_with_another_timestamp_is_stored_once(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        first = _ingest(engine, _trace("t-1", NOW), _trace("t-2", NOW))
        again = _ingest(engine, _trace("t-1", NOW - timedelta(days=2)), _trace("t-3", NOW))
        assert (first.stored, again.stored, again.duplicates) == (2, 1, 1)
        with engine.connect() as conn:
            count = conn.execute(text("SELECT count(*) FROM traces WHERE trace_id = 't-1'"))
            assert count.scalar_one() == 1
    finally:
        engine.dispose()


def test_concurrent_writers_of_one_id_under_two_days_store_it_once(pg: Engine) -> None:
    """The second writer waits for the first (the key's unique index), then skips the row."""
    insert = text(
        "INSERT INTO traces (trace_id, timestamp, received_at, updated_at, source, question) "
        "VALUES ('same', :ts, now(), now(), 'json', 'q') RETURNING trace_id"
    )
    second: list[Any] = []
    with pg.connect() as a:
        assert a.execute(insert, {"ts": NOW}).all() == [("same",)]

        def other() -> None:
            with pg.connect() as b:
                second.append(b.execute(insert, {"ts": NOW - timedelta(days=3)}).all())
                b.commit()

        thread = threading.Thread(target=other)
        thread.start()
        thread.join(0.5)
        assert thread.is_alive()  # blocked on the first writer's key
        a.commit()
        thread.join(10)
    assert second == [[]]
    assert len(_where(pg, "same")) == 1


def test_a_row_moving_to_another_day_keeps_its_key(pg: Engine) -> None:
    make_partitions(pg, NOW - timedelta(days=1), ahead=1)
    _ingest(pg, _trace("mover", NOW))
    with pg.begin() as conn:
        conn.execute(
            text("UPDATE traces SET timestamp = :ts WHERE trace_id = 'mover'"),
            {"ts": NOW - timedelta(days=1)},
        )
    [(partition, _)] = _where(pg, "mover")
    assert partition == partitions.partition_name("traces", (NOW - timedelta(days=1)).date())
    assert _ingest(pg, _trace("mover", NOW)).duplicates == 1


def test_rows_waiting_in_the_default_partition_move_into_a_new_one(pg: Engine) -> None:
    later = NOW + timedelta(days=40)
    _ingest(pg, _trace("future", later))
    assert _where(pg, "future")[0][0] == "traces_default"
    made = make_partitions(pg, later, ahead=1)
    assert partitions.partition_name("traces", later.date()) in made
    assert _where(pg, "future")[0][0] == partitions.partition_name("traces", later.date())
    assert make_partitions(pg, later, ahead=1) == []
    assert _ingest(pg, _trace("future", NOW)).duplicates == 1  # its key moved with it


def test_past_days_waiting_in_the_default_partition_get_theirs(pg: Engine) -> None:
    before = NOW - timedelta(days=20)
    _ingest(pg, _trace("late", before))
    assert _where(pg, "late")[0][0] == "traces_default"
    assert partitions.partition_name("traces", before.date()) in make_partitions(pg, NOW, 1)
    assert _where(pg, "late")[0][0] == partitions.partition_name("traces", before.date())


def test_outcomes_of_a_trace_whose_timestamp_moved_stay_one_row(db_url: str) -> None:
    engine = make_engine(db_url)
    row = {"job": "j", "trace_id": "t", "trace_updated_at": NOW, "groups": None}
    try:
        with make_session_factory(engine)() as session:
            upsert_outcomes(session, [row | {"ts": NOW, "outcomes": {"m": 1.0}}])
            moved = NOW - timedelta(days=1)
            upsert_outcomes(session, [row | {"ts": moved, "outcomes": {"m": 0.5}}], {"t"})
            session.commit()
            rows = session.execute(select(JobOutcome.ts, JobOutcome.outcomes)).all()
        assert rows == [(moved, {"m": 0.5})]
    finally:
        engine.dispose()


def _hang_off(session: Session, trace_id: str, at: datetime) -> None:
    for sql in (
        "INSERT INTO samples (trace_id, purpose, sampled_at) VALUES (:t, 'judge', :at)",
        "INSERT INTO feedback (event_hash, trace_id, timestamp, received_at, applied) "
        "VALUES (:t, :t, :at, :at, true)",
        "INSERT INTO human_labels (trace_id, metric, labeler, value, timestamp, received_at) "
        "VALUES (:t, 'faithfulness', '', 1, :at, :at)",
        "INSERT INTO evaluation_events (event_hash, trace_id, name, time_ns, received_at) "
        "VALUES (:t, :t, 'x', 0, :at)",
        "INSERT INTO judgments (cache_key, metric, model, prompt_version, input_hash, "
        "temperature, trace_id, status, created_at) "
        "VALUES ('k', 'faithfulness', 'm', 'v', 'h', 0, :t, 'ok', :at)",
        "INSERT INTO job_outcomes (job, trace_id, trace_updated_at, ts, outcomes) "
        "VALUES ('j', :t, :at, :at, '{}')",
    ):
        session.execute(text(sql), {"t": trace_id, "at": at})


def test_retention_removes_old_traces_and_what_hangs_off_them(db_url: str) -> None:
    engine = make_engine(db_url)
    old, kept = NOW - timedelta(days=5), NOW - timedelta(hours=1)
    try:
        _ingest(engine, _trace("old", old), _trace("kept", kept))
        with make_session_factory(engine)() as session:
            session.execute(text("DELETE FROM samples"))
            _hang_off(session, "old", old)
            _hang_off(session, "kept", kept)
            session.commit()
        make_partitions(engine, NOW, ahead=1)  # PostgreSQL: the old day's rows get theirs
        report = expire(engine, NOW - timedelta(days=3))
        assert (report.traces, report.outcomes) == (1, 1)
        tables = ("traces", "samples", "feedback", "human_labels", "evaluation_events")
        with engine.connect() as conn:
            for table in (*tables, "judgments", "job_outcomes"):
                left = conn.execute(text(f"SELECT trace_id FROM {table}")).scalars().all()
                assert left == ["kept"], table
        if engine.dialect.name == "postgresql":
            assert partitions.partition_name("traces", old.date()) in report.dropped
            assert partitions.partition_name("job_outcomes", old.date()) in report.dropped
            with engine.connect() as conn:
                assert partitions.partitions(conn, "traces").keys().isdisjoint({old.date()})
                keys = conn.execute(text("SELECT trace_id FROM trace_keys")).scalars().all()
            assert keys == ["kept"]
    finally:
        engine.dispose()


def test_migration_partitions_existing_rows_and_downgrades() -> None:
    url = create_postgres_database()
    engine = make_engine(url)
    try:
        upgrade(url, "0010")
        rows = {"a": NOW - timedelta(days=3), "b": NOW, "c": datetime(1990, 1, 1, tzinfo=UTC)}
        with engine.begin() as conn:
            for trace_id, ts in rows.items():
                conn.execute(
                    text(
                        "INSERT INTO traces (trace_id, timestamp, received_at, updated_at, "
                        "source, question) VALUES (:t, :ts, now(), now(), 'json', 'q')"
                    ),
                    {"t": trace_id, "ts": ts},
                )
                conn.execute(
                    text(
                        "INSERT INTO job_outcomes (job, trace_id, trace_updated_at, ts, outcomes)"
                        " VALUES ('j', :t, :ts, :ts, '{}')"
                    ),
                    {"t": trace_id, "ts": ts},
                )
        upgrade(url)
        assert _where(engine, "a")[0][0] == partitions.partition_name("traces", rows["a"].date())
        assert _where(engine, "c")[0][0] == "traces_default"
        with engine.connect() as conn:
            days = set(partitions.partitions(conn, "job_outcomes"))
            keys = set(conn.execute(text("SELECT trace_id FROM trace_keys")).scalars())
        first = rows["a"].date()
        assert days == {first + timedelta(days=i) for i in range((NOW.date() - first).days + 8)}
        assert keys == set(rows)
        _ingest(engine, _trace("a", NOW))  # a known id under another day: not stored again
        assert len(_where(engine, "a")) == 1
        command.downgrade(alembic_config(url), "0010")
        with engine.connect() as conn:
            assert not partitions.is_partitioned(conn, "traces")
            stored = conn.execute(text("SELECT trace_id FROM traces ORDER BY 1")).scalars().all()
            outcomes = conn.execute(text("SELECT count(*) FROM job_outcomes")).scalar_one()
        assert (stored, outcomes) == (["a", "b", "c"], 3)
        upgrade(url)
        with engine.connect() as conn:
            assert partitions.is_partitioned(conn, "traces")
    finally:
        engine.dispose()
        drop_postgres_database(url)


def test_partition_days_are_utc() -> None:
    late = datetime(2026, 3, 1, 23, 30, tzinfo=UTC)
    assert partitions.coming_days(late, 1) == [date(2026, 3, 1), date(2026, 3, 2)]
    assert partitions.partition_name("traces", date(2026, 3, 1)) == "traces_p20260301"


def test_storage_maintenance_makes_days_ahead_and_applies_retention(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        _ingest(engine, _trace("old", NOW - timedelta(days=9)), _trace("new", NOW))
        maintenance = StorageMaintenance(engine, ahead=10, retention=timedelta(days=7))
        report = maintenance.run_once(NOW)
        assert report is not None and report.expired is not None
        assert report.expired.traces == 1
        if engine.dialect.name == "postgresql":
            assert partitions.partition_name("traces", (NOW + timedelta(days=10)).date()) in (
                report.made
            )
            assert maintenance.run_once(NOW) == MaintenanceReport([], RetentionReport())
        with engine.connect() as conn:
            assert conn.execute(text("SELECT trace_id FROM traces")).scalars().all() == ["new"]
    finally:
        engine.dispose()
