"""The sessions job's judged outcome on SQLite and PostgreSQL, litellm over real HTTP to the
scripted local server: sampled closed sessions are judged once per version (no second call),
a late turn re-judges a session once and it counts once, the per-run budget defers the rest
to later runs, a transient failure waits for a retry, and the judge_agreement job compares
the judged sessions with human labels on their first turns."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from sqlalchemy import Engine, Text, cast, select
from sqlalchemy.orm import Session

from collector.jobs.catalog import judge_agreement
from collector.jobs.catalog import sessions as sessions_job
from collector.jobs.catalog.session_judging import sampled
from collector.jobs.catalog.sessions import SessionsJob
from collector.jobs.run.definition import JobEnvironment
from collector.jobs.windows.window import parse_windows
from collector.settings import SessionSettings, Settings, load_settings
from collector.store.models import HumanLabel, JobOutcome, MetricResult
from collector.store.session import make_engine, make_session_factory
from ragpulse.judge import make_judge
from tests.fixtures.cli import ragpulse_in_process as ragpulse
from tests.fixtures.llm_server import Reply, ScriptedLLM, prompt_text
from tests.fixtures.prometheus import free_port
from tests.jobs.helpers import add_trace, assert_buckets_match_outcomes
from tests.jobs.test_sessions_job import NOW, TopicEmbedder

_TASK = re.compile(r"ragpulse judge task: (conversation_[a-z]+)")
OPERATOR = "Соедините меня с оператором, пожалуйста"


class Judged:
    """Answers the two judged-outcome prompts: a session asking for a person is unsatisfied
    and frustrated, any other satisfied and calm; records (task, first question) of each
    call, and fails the completeness calls with HTTP 503 while `failing` is set."""

    def __init__(self, server: ScriptedLLM) -> None:
        self.calls: list[tuple[str, str]] = []
        self.failing = False
        server.fallback = self.reply

    def reply(self, body: dict[str, Any]) -> Reply:
        text = prompt_text(body)
        found = _TASK.search(text)
        task = found.group(1) if found else ""
        first = re.search(r"turn=\"1\">\s*(.*?)\s*</untrusted_user", text, re.DOTALL)
        self.calls.append((task, first.group(1) if first else ""))
        angry = "оператор" in text
        if task == "conversation_completeness":
            if self.failing:
                return Reply(status=503, content="overloaded")
            return Reply(
                content={
                    "reason": "r",
                    "intentions": [{"intention": "help", "satisfied": 0 if angry else 1}],
                }
            )
        return Reply(content={"reason": "r", "score": 0.8 if angry else 0.1})

    def count(self, task: str = "conversation_completeness") -> int:
        return sum(t == task for t, _ in self.calls)


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    eng = make_engine(db_url)
    yield eng
    eng.dispose()


def _job(
    engine: Engine, server: ScriptedLLM, api_base: str | None = None, **cfg: Any
) -> SessionsJob:
    """A fresh job object (as after a restart) with a judge over the scripted server (or
    `api_base`)."""
    settings = load_settings(
        judge={
            "models": ["openai/judge-a"],
            "api_base": api_base or server.base_url,
            "api_key": "sk-x",
            "max_retries": 0,
            "timeout_s": 2.0,
        },
    )
    factory = make_session_factory(engine)
    definition = sessions_job.definition(Settings(sessions=SessionSettings(**cfg)))
    env = JobEnvironment(
        session_factory=factory,
        windows=parse_windows(["1h", "24h"]),
        group_labels=["tenant"],
        embedder=TopicEmbedder(),
        judge=make_judge(settings.judge, factory),
        judge_transient_retries=2,
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
    minutes: float,
    answer: str = "an answer",
) -> None:
    add_trace(
        session,
        trace_id,
        NOW + timedelta(minutes=minutes),
        question=question,
        answer=answer,
        session_id=sid,
        tags={"tenant": "acme"},
    )


def _plant(engine: Engine) -> None:
    """s1 and s2 closed at NOW (idle), s3 still open (its last turn NOW-2m)."""
    with make_session_factory(engine)() as session:
        _turn(session, "s1", "a1", "How do I reset my password?", -20)
        _turn(session, "s1", "a2", "Thanks, that helped", -19)
        _turn(session, "s2", "b1", "Can I pay by card?", -31)
        _turn(session, "s2", "b2", "Do you ship abroad?", -30)
        _turn(session, "s3", "c1", "Where is my order?", -2)
        session.commit()


def _rows(engine: Engine) -> dict[str, dict[str, Any]]:
    with make_session_factory(engine)() as session:
        query = select(JobOutcome.trace_id, cast(JobOutcome.outcomes, Text)).where(
            JobOutcome.job == "sessions"
        )
        return {t: orjson.loads(o) for t, o in session.execute(query)}


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


def _check_sums(engine: Engine) -> None:
    with make_session_factory(engine)() as session:
        assert_buckets_match_outcomes(session, "sessions")


def test_sessions_are_judged_once_per_version_and_a_late_turn_once_more(
    engine: Engine, llm_server: ScriptedLLM
) -> None:
    judged = Judged(llm_server)
    _plant(engine)
    job = _job(engine, llm_server, judge_rate=1.0)
    report = job.run(NOW)
    assert report.new_traces == 2 and judged.count() == 2 and len(judged.calls) == 4
    rows = _rows(engine)
    assert rows["a1"]["session_completeness"] == 1.0
    assert rows["a1"]["session_frustration"] == pytest.approx(0.1)
    assert "session_completeness" not in rows["a2"]  # on the first turn only
    complete = _latest(engine, "session_completeness", "1h")
    assert complete.n == 2 and complete.value == pytest.approx(1.0)
    assert complete.signature is not None and "judge:openai/judge-a" in complete.signature
    _check_sums(engine)

    # stored as they are: no second call, from this instance or a restarted one
    assert job.run(NOW + timedelta(minutes=1)).new_traces == 0
    assert _job(engine, llm_server, judge_rate=1.0).run(NOW + timedelta(minutes=1)).new_traces == 0
    assert len(judged.calls) == 4

    # s2 gets a late request for a person: judged again once it is idle, counted once
    with make_session_factory(engine)() as session:
        _turn(session, "s2", "b3", OPERATOR, 1)
        session.commit()
    job.run(NOW + timedelta(minutes=2))
    assert len(judged.calls) == 4  # open again: not judged while open
    job.run(NOW + timedelta(minutes=7))  # s2 reopened and closed, s3 closed
    assert sorted(q for t, q in judged.calls[4:] if t == "conversation_completeness") == [
        "Can I pay by card?",
        "Where is my order?",
    ]
    rows = _rows(engine)
    assert rows["b1"]["session_completeness"] == 0.0
    assert rows["b1"]["session_frustration"] == pytest.approx(0.8)
    day = _latest(engine, "session_completeness", "24h")
    assert day.n == 3 and day.value == pytest.approx(2 / 3)  # s2 once, with its new value
    assert _latest(engine, "session_frustration", "24h").n == 3
    _check_sums(engine)
    job.run(NOW + timedelta(minutes=8))
    assert len(judged.calls) == 8


def test_the_budget_defers_sampled_sessions_to_later_runs(
    engine: Engine, llm_server: ScriptedLLM
) -> None:
    judged = Judged(llm_server)
    _plant(engine)
    job = _job(engine, llm_server, judge_rate=1.0, judge_per_run=1)
    assert job.run(NOW).new_traces == 2  # both closed, one judged
    rows = _rows(engine)
    assert judged.count() == 1
    assert sum("session_completeness" in rows[t] for t in ("a1", "b1")) == 1
    assert rows["a1"]["session_resolved"] == 1.0 and rows["b1"]["session_resolved"] == 1.0
    assert _latest(engine, "session_completeness", "1h").n == 1
    assert _latest(engine, "session_resolved", "1h").n == 2

    job.run(NOW + timedelta(minutes=1))  # the owed one, without recounting its outcome
    rows = _rows(engine)
    assert judged.count() == 2 and all("session_completeness" in rows[t] for t in ("a1", "b1"))
    assert _latest(engine, "session_completeness", "1h").n == 2
    assert _latest(engine, "session_resolved", "1h").n == 2
    _check_sums(engine)
    job.run(NOW + timedelta(minutes=2))
    assert judged.count() == 2


def test_only_sampled_sessions_are_judged(engine: Engine, llm_server: ScriptedLLM) -> None:
    judged = Judged(llm_server)
    ids = [f"s{i}" for i in range(12)]
    with make_session_factory(engine)() as session:
        for i, sid in enumerate(ids):
            # a transcript of its own each (the judge's cache answers a repeated one)
            _turn(session, sid, f"t{i}", "Can I pay by card?", -30 + i, f"answer {i}")
        session.commit()
    _job(engine, llm_server, judge_rate=0.5).run(NOW)
    rows = _rows(engine)
    chosen = {f"t{i}" for i, sid in enumerate(ids) if sampled(sid, 0.5)}
    assert 0 < len(chosen) < len(ids)
    assert {t for t, o in rows.items() if "session_completeness" in o} == chosen
    assert judged.count() == len(chosen)


def test_sampling_is_deterministic_and_at_the_rate() -> None:
    ids = [f"session-{i}" for i in range(4000)]
    share = sum(sampled(s, 0.1) for s in ids) / len(ids)
    assert 0.085 < share < 0.115
    assert [sampled(s, 0.1) for s in ids[:50]] == [sampled(s, 0.1) for s in ids[:50]]
    assert not any(sampled(s, 0.0) for s in ids[:50]) and all(sampled(s, 1.0) for s in ids[:50])
    assert {s for s in ids if sampled(s, 0.05)} <= {s for s in ids if sampled(s, 0.1)}


def test_a_transient_failure_waits_for_a_retry(engine: Engine, llm_server: ScriptedLLM) -> None:
    judged = Judged(llm_server)
    judged.failing = True
    with make_session_factory(engine)() as session:
        _turn(session, "s1", "a1", "How do I reset my password?", -20)
        session.commit()
    job = _job(engine, llm_server, judge_rate=1.0)
    job.run(NOW)
    stored = _rows(engine)["a1"]
    assert stored["session_completeness"]["transient"] is True
    assert stored["session_frustration"] == pytest.approx(0.1)
    assert _latest(engine, "session_completeness", "1h").n == 0  # not measured yet
    _check_sums(engine)

    judged.failing = False
    frustration_calls = judged.count("conversation_frustration")
    job.run(NOW + timedelta(minutes=1))
    stored = _rows(engine)["a1"]
    assert stored["session_completeness"] == 1.0
    # the frustration verdict came from the judge's cache (the judgments table)
    assert judged.count("conversation_frustration") == frustration_calls
    assert _latest(engine, "session_completeness", "1h").n == 1
    _check_sums(engine)


def test_agreement_with_labels_on_the_first_turn(engine: Engine, llm_server: ScriptedLLM) -> None:
    Judged(llm_server)
    factory = make_session_factory(engine)
    with factory() as session:
        for i in range(8):
            question = OPERATOR if i % 2 else "Can I pay by card?"
            _turn(session, f"s{i}", f"t{i}", question, -40 + i, f"answer {i}")
        session.commit()
    _job(engine, llm_server, judge_rate=1.0).run(NOW)
    labels = {f"t{i}": (0.0 if i % 2 else 1.0) for i in range(6)}
    labels["t0"] = 0.5  # the judge said 1.0: one disagreement
    with factory() as session:
        for trace, value in labels.items():
            session.add(
                HumanLabel(
                    trace_id=trace,
                    metric="session_completeness",
                    labeler="",
                    value=value,
                    timestamp=NOW,
                )
            )
        session.commit()
    settings = load_settings(scheduler={"jobs": ["judge_agreement"]})
    definition = judge_agreement.definition(settings)
    env = JobEnvironment(factory, parse_windows(["1h", "24h"]), group_labels=[])
    assert definition.factory is not None
    assert definition.factory(definition, env).run(NOW).status == "ok"
    with factory() as session:
        rows = session.scalars(
            select(MetricResult).where(MetricResult.metric == "session_completeness")
        ).all()
    agreement = [r for r in rows if r.window == "agreement:1h"]
    assert agreement and all(r.n == 6 for r in agreement if r.value is not None)
    corrected = next(r for r in rows if r.window == "corrected:1h")
    # judge mean over 8 sessions 0.5, rectified by the labelled six (judge - human: 0.5/6)
    assert corrected.n == 6
    assert corrected.value == pytest.approx(0.5 - 0.5 / 6)


def test_an_unreachable_judge_leaves_the_sessions_owed(
    engine: Engine, llm_server: ScriptedLLM
) -> None:
    judged = Judged(llm_server)
    _plant(engine)
    down = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    _job(engine, llm_server, api_base=down, judge_rate=1.0).run(NOW)
    rows = _rows(engine)
    assert rows["a1"]["session_resolved"] == 1.0
    assert not any("session_completeness" in o for o in rows.values())
    _job(engine, llm_server, judge_rate=1.0).run(NOW + timedelta(minutes=1))
    rows = _rows(engine)
    assert rows["a1"]["session_completeness"] == 1.0 and judged.count() == 2
    _check_sums(engine)


@pytest.mark.slow
def test_sessions_show_and_export_the_judged_outcome(
    engine: Engine, llm_server: ScriptedLLM, db_url: str, tmp_path: Path
) -> None:
    Judged(llm_server)
    _plant(engine)
    _job(engine, llm_server, judge_rate=1.0).run(NOW)
    env = {"RAGPULSE_DATABASE__URL": db_url}
    shown = ragpulse("sessions", "show", "s1", cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    assert "judged: completeness=1  frustration=0.1" in shown.stdout
    one = json.loads(ragpulse("sessions", "show", "s1", "--json", cwd=tmp_path, env=env).stdout)
    assert one["outcome"]["judged"] == {"completeness": 1.0, "frustration": pytest.approx(0.1)}
    out = tmp_path / "sessions.jsonl"
    since = f"{(datetime.now(UTC) - NOW).days + 2}d"
    done = ragpulse(
        "sessions", "export", "--since", since, "--output", str(out), cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr
    written = {r["session_id"]: r for r in map(json.loads, out.read_text("utf-8").splitlines())}
    assert set(written) == {"s1", "s2"}
    assert written["s2"]["judged"]["completeness"] == 1.0
