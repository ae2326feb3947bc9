"""Loading stored outcomes after a restart, and reusing mapped samples across runs."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine

from benchmarks.outcome_columns import OutcomeColumns
from collector.jobs.outcomes.codec import encode
from collector.jobs.run.definition import JobEnvironment
from collector.jobs.run.engine import IncrementalJob
from collector.jobs.scheduler import definitions
from collector.jobs.windows.window import parse_windows
from collector.settings import load_settings
from collector.store.samples import trace_to_sample
from collector.store.session import make_engine, make_session_factory
from evaluators.outcome import Failed, Outcome, Score, Skipped
from evaluators.sample import Sample
from exporters.quality import ResultsCache
from tests.jobs.helpers import add_trace

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def test_put_encoded_matches_put() -> None:
    outcomes: dict[str, Outcome] = {
        "a": Score(0.25),
        "b": Skipped("no reference"),
        "c": Failed("ValueError"),
    }
    direct = OutcomeColumns(["a", "b", "c"], ["tenant"])
    stored = OutcomeColumns(["a", "b", "c"], ["tenant"])
    for i in range(3):
        direct.put(f"t{i}", 1.0, 100.0 + i, {"tenant": "acme"}, outcomes)
        encoded = {m: encode(o) for m, o in outcomes.items()}
        stored.put_encoded(f"t{i}", 1.0, 100.0 + i, {"tenant": "acme"}, encoded)
    assert direct.aggregate(0, 1000, {}, {}) == stored.aggregate(0, 1000, {}, {})


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    eng = make_engine(db_url)
    yield eng
    eng.dispose()


def _job(engine: Engine, mapped: list[str]) -> IncrementalJob:
    def to_sample(row: Any) -> Sample:
        mapped.append(row.trace_id)
        sample: Sample = trace_to_sample(row)
        return sample

    settings = load_settings()
    env = JobEnvironment(
        session_factory=make_session_factory(engine),
        windows=parse_windows(settings.scheduler.windows),
        group_labels=settings.scheduler.group_labels,
        results=ResultsCache(),
        to_sample=to_sample,
    )
    return IncrementalJob(definitions(settings)["judge_pipeline"], env)


def _labelled(session: Any, i: int, ts: datetime, correct: bool) -> None:
    add_trace(
        session,
        f"j{i}",
        ts,
        judge_decision=True,
        judge_label=correct,
        judge_latency_ms=100.0 + i,
        tags={"tenant": "acme" if i % 2 else "globex"},
    )


def test_restart_and_reuse_give_the_same_results(engine: Engine) -> None:
    factory = make_session_factory(engine)
    with factory() as session:
        for i in range(6):
            _labelled(session, i, NOW - timedelta(minutes=30 + i), correct=i % 3 != 0)
        session.commit()
    mapped: list[str] = []
    job = _job(engine, mapped)
    job.run(NOW)
    assert sorted(mapped) == [f"j{i}" for i in range(6)]

    with factory() as session:
        _labelled(session, 6, NOW + timedelta(minutes=1), correct=True)
        session.commit()
    mapped.clear()
    later = NOW + timedelta(minutes=2)
    job.run(later)
    assert mapped == ["j6"]  # only the new trace is read and mapped
    kept = {(p.metric, p.window, p.group_key): p for p in job._publish}

    restarted = _job(engine, [])  # a new process: state comes from job_outcomes
    restarted.run(later + timedelta(seconds=1))
    again = {(p.metric, p.window, p.group_key): p for p in restarted._publish}
    assert again.keys() == kept.keys()
    for key, point in kept.items():
        assert (again[key].value, again[key].n) == (point.value, point.n), key
    assert kept[("judge_accuracy", "1h", "")].n == 7
