"""The sessions job on SQLite and PostgreSQL: sessions close when idle or at the turn limit,
a late turn reopens one and its outcome is recomputed once (bucket sums checked), a new
job instance (a restart, another worker) carries on alike, and the outcomes are series."""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine, Text, cast, select, update
from sqlalchemy.orm import Session, sessionmaker

from collector.jobs.catalog import sessions as sessions_job
from collector.jobs.catalog.sessions import SessionsJob
from collector.jobs.drift.detector import DriftConfig
from collector.jobs.recording.observers import Evaluated
from collector.jobs.run.definition import JobEnvironment
from collector.jobs.scheduler import JobRunner
from collector.jobs.windows.window import parse_windows
from collector.settings import SessionSettings, Settings
from collector.store.models import JobOutcome, MetricResult, Trace
from collector.store.session import make_engine, make_session_factory
from evaluators.conversation_metrics import SESSION_METRICS
from exporters.prometheus import QualityCollector
from exporters.quality import ResultsCache
from tests.fixtures.db import create_postgres_database, drop_postgres_database
from tests.jobs.helpers import add_trace, assert_buckets_match_outcomes, bucket_rows

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
TOPICS = {
    "How do I reset my password?": 0,
    "I forgot my password, how can I change it?": 0,
    "What is the delivery time to Moscow?": 1,
    "Thanks, that helped": 2,
    "Can I pay by card?": 3,
    "Как заблокировать карту?": 4,
    "Соедините меня с оператором, пожалуйста": 5,
    "Where is my order?": 6,
    "Do you ship abroad?": 7,
    "What are your opening hours?": 8,
}

PARAPHRASE = "I forgot my password, how can I change it?"


class TopicEmbedder:
    """Each question -> the unit vector of its topic: paraphrases share one (cosine 1),
    other questions are orthogonal (cosine 0)."""

    model_name = "test-topics"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), 16), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i, TOPICS[text]] = 1.0
        return out


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    eng = make_engine(db_url)
    yield eng
    eng.dispose()


def _job(
    engine: Engine,
    cache: ResultsCache | None = None,
    windows: tuple[str, ...] = ("1h", "24h"),
    drift: DriftConfig | None = None,
    observers: Sequence[Any] = (),
    **cfg: Any,
) -> SessionsJob:
    settings = Settings(sessions=SessionSettings(**cfg))
    definition = sessions_job.definition(settings)
    env = JobEnvironment(
        session_factory=make_session_factory(engine),
        windows=parse_windows(list(windows)),
        group_labels=["tenant"],
        embedder=TopicEmbedder(),
        results=cache,
        drift=drift,
        observers=observers,
    )
    assert definition.factory is not None
    job = definition.factory(definition, env)
    assert isinstance(job, SessionsJob)
    return job


def _turn(
    session: Session,
    sid: str,
    trace_id: str,
    question: str,
    ts: datetime,
    tenant: str = "acme",
    **fields: Any,
) -> None:
    add_trace(
        session,
        trace_id,
        ts,
        question=question,
        answer="an answer",
        session_id=sid,
        tags={"tenant": tenant},
        **fields,
    )


def _rows(engine: Engine) -> dict[str, dict[str, Any]]:
    """trace_id -> stored outcomes of the sessions job."""
    import orjson

    with make_session_factory(engine)() as session:
        query = select(JobOutcome.trace_id, cast(JobOutcome.outcomes, Text)).where(
            JobOutcome.job == "sessions"
        )
        return {t: orjson.loads(o) for t, o in session.execute(query)}


def _check_sums(engine: Engine) -> None:
    with make_session_factory(engine)() as session:
        assert_buckets_match_outcomes(session, "sessions")


def _latest(engine: Engine, metric: str, window: str, group: str = "") -> MetricResult:
    with make_session_factory(engine)() as session:
        found = session.scalars(
            select(MetricResult)
            .where(
                MetricResult.metric == metric,
                MetricResult.window == window,
                MetricResult.group_key == group,
            )
            .order_by(MetricResult.computed_at.desc(), MetricResult.id.desc())
            .limit(1)
        ).first()
    assert found is not None
    return found


def _plant(factory: sessionmaker[Session]) -> None:
    """s1: a re-ask, idle since NOW-18m; s2: resolved, idle since NOW-30m (tenant beta);
    s3: still open (its last turn NOW-2m)."""
    with factory() as session:
        _turn(session, "s1", "a1", "How do I reset my password?", NOW - timedelta(minutes=20))
        _turn(
            session,
            "s1",
            "a2",
            "I forgot my password, how can I change it?",
            NOW - timedelta(minutes=19),
        )
        _turn(session, "s1", "a3", "Thanks, that helped", NOW - timedelta(minutes=18))
        _turn(session, "s2", "b1", "Can I pay by card?", NOW - timedelta(minutes=31), "beta")
        _turn(session, "s2", "b2", "Do you ship abroad?", NOW - timedelta(minutes=30), "beta")
        _turn(session, "s3", "c1", "Where is my order?", NOW - timedelta(minutes=2))
        session.commit()


def test_idle_sessions_close_and_open_ones_wait(engine: Engine) -> None:
    factory = make_session_factory(engine)
    _plant(factory)
    cache = ResultsCache()
    job = _job(engine, cache)
    report = job.run(NOW)
    job.publish()
    assert report.status == "ok" and report.new_traces == 2
    rows = _rows(engine)
    assert set(rows) == {"a1", "a2", "a3", "b1", "b2"}  # s3 is still open
    assert rows["a1"]["session_resolved"] == 0.0 and rows["a1"]["session_re_asked"] == 1.0
    assert rows["a1"]["turn_re_asked"] == 1.0 and rows["a2"]["turn_re_asked"] == 0.0
    assert rows["a1"]["turns_to_resolution"] == {"skipped": "not resolved"}
    assert "session_resolved" not in rows["a2"]
    assert rows["b1"]["session_resolved"] == 1.0 and rows["b1"]["turns_to_resolution"] == 2.0
    _check_sums(engine)

    resolved = _latest(engine, "session_resolved", "1h")
    assert resolved.n == 2 and resolved.value == pytest.approx(0.5)
    assert resolved.ci_lower is not None and resolved.ci_upper is not None
    assert resolved.ci_lower < 0.5 < resolved.ci_upper
    assert _latest(engine, "session_resolved", "1h", "tenant=beta").value == pytest.approx(1.0)
    turns = _latest(engine, "turn_re_asked", "1h")
    assert turns.n == 5 and turns.value == pytest.approx(0.2)
    body = QualityCollector(cache, ["tenant"]).render().decode()
    assert 'ragpulse_metric_value{metric="session_resolved",tenant="beta",window="1h"} 1.0' in body
    assert 'ragpulse_metric_value{metric="session_re_asked",tenant="acme",window="1h"} 1.0' in body

    # five minutes on, s3 has been idle long enough; nothing else is stored again
    again = job.run(NOW + timedelta(minutes=5))
    assert again.new_traces == 1 and set(_rows(engine)) == {"a1", "a2", "a3", "b1", "b2", "c1"}
    assert _latest(engine, "session_resolved", "1h").n == 3
    _check_sums(engine)
    assert job.run(NOW + timedelta(minutes=6)).new_traces == 0


def test_a_session_closes_at_the_turn_limit_and_later_turns_do_not_reopen_it(
    engine: Engine,
) -> None:
    factory = make_session_factory(engine)
    with factory() as session:
        for i, q in enumerate(["Can I pay by card?", "Do you ship abroad?", "Where is my order?"]):
            _turn(session, "s", f"t{i}", q, NOW - timedelta(minutes=3 - i))
        session.commit()
    job = _job(engine, max_turns=3)
    assert job.run(NOW).new_traces == 1  # closed at once, not idle yet
    before = _rows(engine)
    assert set(before) == {"t0", "t1", "t2"} and before["t0"]["turns_to_resolution"] == 3.0
    with factory() as session:
        _turn(session, "s", "t3", "Соедините меня с оператором, пожалуйста", NOW)
        session.commit()
    assert job.run(NOW + timedelta(minutes=10)).new_traces == 0
    assert _rows(engine) == before
    _check_sums(engine)


def test_a_late_turn_reopens_the_session_and_it_is_counted_once(engine: Engine) -> None:
    factory = make_session_factory(engine)
    _plant(factory)
    job = _job(engine)
    job.run(NOW)
    with factory() as session:
        sums_before = bucket_rows(session, "sessions")
    # s2 gets a late escalation: open again until it has been idle for 5 minutes
    late = NOW + timedelta(minutes=1)
    with factory() as session:
        _turn(session, "s2", "b3", "Соедините меня с оператором, пожалуйста", late, "beta")
        session.commit()
    assert job.run(NOW + timedelta(minutes=2)).new_traces == 0
    assert "b3" not in _rows(engine)
    with factory() as session:
        assert bucket_rows(session, "sessions") == sums_before

    report = job.run(NOW + timedelta(minutes=7))
    assert report.new_traces == 2  # s2 recomputed, s3 closed
    rows = _rows(engine)
    assert rows["b1"]["session_escalated"] == 1.0 and rows["b1"]["session_resolved"] == 0.0
    assert rows["b3"]["turn_escalation"] == 1.0
    _check_sums(engine)
    day = _latest(engine, "session_escalated", "24h", "tenant=beta")
    assert day.n == 1 and day.value == pytest.approx(1.0)  # one session, not two
    assert _latest(engine, "session_resolved", "24h").n == 3

    # feedback folded into a turn later is a new version: recomputed once more
    with factory() as session:
        session.execute(
            update(Trace)
            .where(Trace.trace_id == "c1")
            .values(feedback_rating=1.0, updated_at=NOW + timedelta(minutes=8))
        )
        session.commit()
    assert job.run(NOW + timedelta(minutes=9)).new_traces == 1
    assert _rows(engine)["c1"]["session_resolved"] == 0.0
    assert job.run(NOW + timedelta(minutes=10)).new_traces == 0
    assert _latest(engine, "session_resolved", "24h").n == 3
    _check_sums(engine)


def test_an_earlier_late_turn_moves_the_session_start(engine: Engine) -> None:
    factory = make_session_factory(engine)
    _plant(factory)
    job = _job(engine)
    job.run(NOW)
    with factory() as session:  # a turn of s1 before its first, stored late
        _turn(
            session,
            "s1",
            "a0",
            "What are your opening hours?",
            NOW - timedelta(minutes=25),
            updated_at=NOW + timedelta(minutes=1),
        )
        session.commit()
    job.run(NOW + timedelta(minutes=2))
    rows = _rows(engine)
    assert "session_resolved" in rows["a0"] and "session_resolved" not in rows["a1"]
    assert _latest(engine, "session_resolved", "1h").n == 2  # s1 and s2, s3 still open
    _check_sums(engine)


def test_a_new_instance_carries_on_like_the_one_before(engine: Engine) -> None:
    """A restart, or the next run on another worker: the state is in the database."""
    factory = make_session_factory(engine)
    _plant(factory)
    _job(engine).run(NOW)
    with factory() as session:
        _turn(session, "s1", "a4", "Соедините меня с оператором, пожалуйста", NOW)
        session.commit()
    second = _job(engine)
    assert second.run(NOW + timedelta(minutes=1)).new_traces == 0  # s1 open again
    assert _job(engine).run(NOW + timedelta(minutes=6)).new_traces == 2  # s1 again, s3
    assert _job(engine).run(NOW + timedelta(minutes=7)).new_traces == 0
    rows = _rows(engine)
    assert rows["a1"]["session_escalated"] == 1.0 and rows["a4"]["turn_escalation"] == 1.0
    assert _latest(engine, "session_resolved", "1h").n == 3
    _check_sums(engine)


@pytest.fixture(params=["sqlite", "postgresql"])
def two_urls(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Two freshly migrated databases of one kind."""
    if request.param == "sqlite":
        template = request.getfixturevalue("sqlite_template")
        paths = [tmp_path / "a.db", tmp_path / "b.db"]
        for path in paths:
            shutil.copyfile(template, path)
        yield f"sqlite:///{paths[0]}", f"sqlite:///{paths[1]}"
        return
    template = request.getfixturevalue("postgres_template")
    urls = [create_postgres_database(template=template) for _ in range(2)]
    try:
        yield urls[0], urls[1]
    finally:
        for url in urls:
            drop_postgres_database(url)


def test_two_workers_racing_store_what_one_stores(two_urls: tuple[str, str]) -> None:
    """Two workers (each its runner and job instance) run the job at the same moments on
    one database: the job's lock lets one through at a time, and they end with the rows
    and sums one worker makes alone on another database."""
    now = datetime.now(UTC)
    outcomes: list[Mapping[str, Any]] = []
    sums = []
    for url, workers in zip(two_urls, (2, 1), strict=True):
        eng = make_engine(url)
        factory = make_session_factory(eng)
        with factory() as session:
            for i in range(30):
                # 26 sessions idle for 14-40 minutes, 4 still open
                start = now - timedelta(minutes=40 - i if i < 26 else 1)
                _turn(session, f"s{i}", f"q{i}", "Can I pay by card?", start, f"t{i % 3}")
                second = PARAPHRASE if i % 4 else "Where is my order?"
                _turn(session, f"s{i}", f"r{i}", "How do I reset my password?", start)
                _turn(session, f"s{i}", f"u{i}", second, start + timedelta(seconds=30))
            session.commit()
        runners = [JobRunner({"sessions": _job(eng)}, eng) for _ in range(workers)]
        for _ in range(3):
            with ThreadPoolExecutor(workers) as pool:
                reports = list(pool.map(lambda r: r.run("sessions"), runners))
            assert {r.status for r in reports} <= {"ok", "locked"}
        outcomes.append(_rows(eng))
        with factory() as session:
            sums.append(bucket_rows(session, "sessions"))
            assert_buckets_match_outcomes(session, "sessions")
        eng.dispose()
    assert len(outcomes[1]) == 3 * 26  # the sessions idle for 5 minutes, every turn
    assert outcomes[0] == outcomes[1] and sums[0] == sums[1]


def test_the_outcomes_have_drift_detectors(engine: Engine) -> None:
    """The session metrics are watched like per-sample ones: the job publishes the page and
    ticket detectors' points for them (the generated rules alert on those)."""
    from ragpulse.job_setup import drift_config

    factory = make_session_factory(engine)
    with factory() as session:
        for i in range(120):
            start = NOW - timedelta(hours=140 - i)
            _turn(session, f"s{i}", f"q{i}", "Can I pay by card?", start)
            if i % 5 == 0:
                _turn(session, f"s{i}", f"r{i}", "Соедините меня с оператором, пожалуйста", start)
        session.commit()
    cache = ResultsCache()
    drift = drift_config(Settings())
    job = _job(engine, cache, ("1h", "24h", "7d"), drift, lookback="7d")
    assert job.run(NOW).new_traces == 120
    job.publish()
    windows = {p.window for p in cache.snapshot() if p.metric == "session_resolved"}
    assert {"24h", "7d", "drift:ticket"} <= windows
    body = QualityCollector(cache, ["tenant"]).render().decode()
    assert 'ragpulse_drift_score{detector="ticket",metric="session_resolved"' in body


class Heard:
    """An outcome observer keeping what it is told: (trace_id, metric) pairs."""

    def __init__(self) -> None:
        self.told: list[tuple[str, str]] = []

    def observe(self, evaluated: Sequence[Evaluated]) -> None:
        self.told += [(e.trace_id, m) for e in evaluated for m in e.outcomes]


def test_the_observers_hear_of_each_outcome_once(engine: Engine) -> None:
    """SLO events and score histograms count what the observers are told: a recomputed
    session tells them only of what is new (its new turn, a session row that moved)."""
    factory = make_session_factory(engine)
    _plant(factory)
    heard = Heard()
    job = _job(engine, observers=[heard])
    job.run(NOW)
    first = sorted(heard.told)
    assert ("a1", "session_resolved") in first and ("b2", "turn_re_asked") in first
    assert len(first) == len(set(first)) == 5 * 2 + 2 * 5
    with factory() as session:
        _turn(session, "s2", "b3", "Соедините меня с оператором, пожалуйста", NOW, "beta")
        session.commit()
    heard.told.clear()
    job.run(NOW + timedelta(minutes=6))
    assert sorted(heard.told) == sorted(
        [("b3", "turn_re_asked"), ("b3", "turn_escalation")]
        + [("c1", m) for m in ("turn_re_asked", "turn_escalation", *SESSION_METRICS)]
    )


def test_a_conversation_slo_counts_each_session_once(engine: Engine) -> None:
    """`95% of conversations resolved` as a quality SLO: its events are the sessions'
    outcomes, recorded by the observer as they close; a reopened session adds none."""
    from collector.settings.slo_spec import SloSpec, validate
    from collector.slo.events import SloEventRecorder, read_counts

    spec = validate(
        SloSpec(
            name="conversations-resolved",
            metric="session_resolved",
            target=0.95,
            window="28d",
            kind="threshold",
            op="==",
            threshold=1.0,
        )
    )
    factory = make_session_factory(engine)
    _plant(factory)
    recorder = SloEventRecorder([spec], factory, max_tenants=10)
    job = _job(engine, observers=[recorder])
    job.run(NOW)

    def counted() -> list[tuple[str, str, str, int]]:
        with factory() as session:
            return [c for c in read_counts(session) if c[3]]

    assert counted() == [
        ("conversations-resolved", "acme", "bad", 1),
        ("conversations-resolved", "beta", "good", 1),
    ]
    with factory() as session:
        _turn(session, "s2", "b3", "Соедините меня с оператором, пожалуйста", NOW, "beta")
        session.commit()
    job.run(NOW + timedelta(minutes=6))  # s2 recomputed, s3 closed (resolved)
    assert counted() == [
        ("conversations-resolved", "acme", "bad", 1),
        ("conversations-resolved", "acme", "good", 1),
        ("conversations-resolved", "beta", "good", 1),
    ]
