"""A job must not hold SQLite's write lock while it evaluates (embedding can take minutes):
the consumer and the embedding store write through other connections meanwhile."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from collector.jobs.run.definition import JobEnvironment
from collector.jobs.run.engine import IncrementalJob
from collector.jobs.scheduler import definitions
from collector.jobs.windows.window import parse_windows
from collector.settings import load_settings
from collector.store.samples import trace_to_sample
from collector.store.session import make_engine, make_session_factory
from collector.store.topics import Assigned, write_assignments
from evaluators.embedder import normalize_rows
from migrations.runner import upgrade
from tests.jobs.helpers import add_trace

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


class WritingEmbedder:
    """Deterministic vectors; every call also tries to write through another connection,
    as the consumer does, with a short busy timeout, and records whether it could."""

    model_name = "test-writer"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.writes: list[bool] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        conn = sqlite3.connect(self.path, timeout=0.5)
        try:
            conn.execute("CREATE TABLE IF NOT EXISTS probe (x INTEGER)")
            conn.execute("INSERT INTO probe VALUES (1)")
            conn.commit()
            self.writes.append(True)
        except sqlite3.OperationalError:
            self.writes.append(False)
        finally:
            conn.close()
        rows = [
            np.frombuffer(hashlib.sha256(t.encode()).digest()[:16], dtype=np.uint8).astype(
                np.float32
            )
            for t in texts
        ]
        return normalize_rows(np.stack(rows)) if rows else np.zeros((0, 16), np.float32)


def test_ux_job_lets_other_writers_in_while_it_embeds(tmp_path: Path) -> None:
    path = tmp_path / "ragpulse.db"
    url = f"sqlite:///{path}"
    upgrade(url)
    engine = make_engine(url)
    settings = load_settings()
    factory = make_session_factory(engine)
    with factory() as session:
        for i in range(12):
            add_trace(
                session,
                f"t{i}",
                NOW - timedelta(minutes=30 - i),
                answer=f"answer {i % 3}",
                session_id=f"s{i % 2}",
                turn=i,
                question=f"question {i % 4}",
            )
        session.commit()
    embedder = WritingEmbedder(path)
    env = JobEnvironment(
        session_factory=factory,
        windows=parse_windows(settings.scheduler.windows),
        group_labels=settings.scheduler.group_labels,
        embedder=embedder,
        to_sample=trace_to_sample,
    )
    try:
        report = IncrementalJob(definitions(settings)["ux"], env).run(NOW)
    finally:
        engine.dispose()
    assert report.status == "ok"
    assert embedder.writes and all(embedder.writes), embedder.writes


def test_a_second_run_does_not_hold_the_lock_while_its_dataset_metrics_embed(
    tmp_path: Path,
) -> None:
    """The demo stored questions' vectors (`embeddings.persist`) and stalled 30 s on its
    second ux run: the job state's new watermark, autoflushed by the aggregation's first
    query, and the outcomes `regroup` moved to the topic their traces got since, held the
    write lock while the dataset metrics embedded new questions."""
    path = tmp_path / "ragpulse.db"
    url = f"sqlite:///{path}"
    upgrade(url)
    engine = make_engine(url)
    settings = load_settings()
    factory = make_session_factory(engine)
    embedder = WritingEmbedder(path)
    env = JobEnvironment(
        session_factory=factory,
        windows=parse_windows(settings.scheduler.windows),
        group_labels=settings.scheduler.group_labels,
        embedder=embedder,
        to_sample=trace_to_sample,
    )
    job = IncrementalJob(definitions(settings)["ux"], env)
    try:
        for run in range(2):
            if run:  # the first run's traces got their topic since: the run moves them first
                with factory() as session:
                    moved = [Assigned(f"r0-t{i}", 7, 0.9) for i in range(12)]
                    write_assignments(session, moved, NOW + timedelta(seconds=30))
                    session.commit()
            with factory() as session:
                for i in range(12):
                    add_trace(
                        session,
                        f"r{run}-t{i}",
                        NOW - timedelta(minutes=30 - i - 2 * run),
                        answer=f"answer {i % 3} of run {run}",
                        session_id=f"s{run}-{i % 2}",
                        turn=i,
                        question=f"question {i % 4} of run {run}",
                    )
                session.commit()
            assert job.run(NOW + timedelta(minutes=run)).status == "ok"
    finally:
        engine.dispose()
    assert len(embedder.writes) > 2 and all(embedder.writes), embedder.writes
