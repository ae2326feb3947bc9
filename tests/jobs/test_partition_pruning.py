"""The jobs' and the drill-down's queries read only the partitions of their window.

A PostgreSQL database with daily partitions from 10 days back to tomorrow; the statements
the real code sends (captured as executed, with their parameters) are EXPLAINed, and the
partitions in each plan must be those of the queried time range (plus, for an open-ended
range, the later days and the default partition) — never the days before it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, event, text
from sqlalchemy.orm import Session

from collector.jobs.recording.cursor import TraceCursor
from collector.jobs.run.evaluation import fetch_rows
from collector.jobs.traces.trace_rows import SampleMemo
from collector.store import partitions
from collector.store.models import JobState
from collector.store.session import make_engine, make_session_factory
from collector.store.worst import worst_traces

NOW = datetime.now(UTC).replace(minute=30, second=0, microsecond=0)
WEEK = 7 * 86400.0
DAYS = [NOW.date() + timedelta(days=i) for i in range(-10, 2)]


@pytest.fixture
def engine(postgres_url: str) -> Iterator[Engine]:
    eng = make_engine(postgres_url)
    with eng.begin() as conn:
        partitions.ensure_partitions(conn, DAYS)
    yield eng
    eng.dispose()


class Captured:
    """The SELECTs on traces / job_outcomes an engine sends, with their parameters."""

    def __init__(self, engine: Engine) -> None:
        self.statements: list[tuple[str, Any]] = []
        event.listen(engine, "before_cursor_execute", self._seen)
        self.engine = engine

    def _seen(self, _conn: Any, _cursor: Any, statement: str, params: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT") and (
            "traces" in statement or "job_outcomes" in statement
        ):
            self.statements.append((statement, params))

    def take(self) -> list[tuple[str, Any]]:
        taken, self.statements = self.statements, []
        return taken

    def scanned(self, statement: str, params: Any) -> set[str]:
        """The relations a statement's plan reads."""
        with self.engine.connect() as conn:
            plan = conn.exec_driver_sql(f"EXPLAIN (FORMAT JSON) {statement}", params).scalar_one()
        plan = json.loads(plan) if isinstance(plan, str) else plan
        found: set[str] = set()

        def walk(node: dict[str, Any]) -> None:
            if "Relation Name" in node:
                found.add(node["Relation Name"])
            for child in node.get("Plans", []):
                walk(child)

        walk(plan[0]["Plan"])
        return found


def days_from(engine: Engine, table: str, first: date) -> set[str]:
    """`table`'s partitions from `first` on, and the default one (an open-ended range)."""
    with engine.connect() as conn:
        names = {name for day, name in partitions.partitions(conn, table).items() if day >= first}
    return names | {partitions.default_name(table)}


def test_the_job_queries_read_only_their_windows_partitions(engine: Engine) -> None:
    captured = Captured(engine)
    cursor = TraceCursor("rag_quality", ["faithfulness"], [], WEEK)
    week_ago = (NOW - timedelta(seconds=WEEK)).date()
    with make_session_factory(engine)() as session:
        cursor.load(session, JobState(job="rag_quality", watermark=NOW - timedelta(hours=1)), NOW)
        cursor.load(session, JobState(job="rag_quality"), NOW)  # the tail of a later run
        loads = captured.take()
        cursor.pending(session, NOW, lambda q: q, None)
        pending = captured.take()
        fetch_rows(session, SampleMemo(lambda r: r), [1, 2, 3], NOW - timedelta(seconds=WEEK))
        fetched = captured.take()
    assert loads and len(pending) == 1 and len(fetched) == 1
    outcomes_week = days_from(engine, "job_outcomes", week_ago)
    for statement, params in loads:  # is there anything to build the bucket sums from?
        read = captured.scanned(statement, params) - {"job_buckets"}
        assert not read or read == outcomes_week
    for statement, params in pending:  # the traces without outcomes of their version
        assert (
            captured.scanned(statement, params)
            == days_from(engine, "traces", week_ago) | outcomes_week
        )
    for statement, params in fetched:
        assert captured.scanned(statement, params) == days_from(engine, "traces", week_ago)


def test_worst_traces_reads_only_the_windows_day(engine: Engine) -> None:
    captured = Captured(engine)
    until = NOW - timedelta(days=3)
    with Session(engine) as session:
        worst_traces(
            session,
            jobs=["rag_quality"],
            metric="faithfulness",
            since=until - timedelta(minutes=20),
            until=until,
        )
    [(statement, params)] = captured.take()
    assert captured.scanned(statement, params) == {
        partitions.partition_name("job_outcomes", until.date())
    }


def test_an_unbounded_lookup_would_read_every_partition(engine: Engine) -> None:
    """The reference: without a time bound the plan holds every partition (so the
    assertions above do check pruning)."""
    captured = Captured(engine)
    with engine.connect() as conn:
        conn.execute(text("SELECT id FROM traces WHERE updated_at > now() - interval '1 hour'"))
    [(statement, params)] = captured.take()
    assert captured.scanned(statement, params) == days_from(engine, "traces", DAYS[0])
