"""Transient judge failures over real HTTP (litellm -> scripted server): the traces wait for
a bounded number of later runs instead of being recorded as errors for good."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from collector.jobs.recording.observers import Evaluated
from collector.jobs.run.definition import JobDefinition
from collector.jobs.run.engine import IncrementalJob
from collector.jobs.scheduler import JobRunner
from collector.jobs.traces.candidates import sampled_for
from collector.settings import load_settings
from collector.store.models import JobOutcome, MetricResult
from collector.store.session import make_engine, make_session_factory
from collector.store.worst import worst_traces
from exporters.prometheus import OperationsMetrics
from ragpulse.job_setup import job_environment
from ragpulse.judge import make_judge
from ragpulse.trace_show import outcome_text as shown
from tests.fixtures.llm_server import Reply, ScriptedLLM, auto_reply, prompt_text
from tests.jobs.helpers import add_trace, assert_buckets_match_outcomes

METRICS = ("faithfulness_rating", "answer_relevance")
DEFINITION = JobDefinition(
    name="judged",
    metrics=METRICS,
    description="two single-call judge metrics",
    candidates=sampled_for("judge"),
    uses_judge=True,
)
_TASK = re.compile(r"ragpulse judge task: ([a-z0-9_]+)")
_TRACE = re.compile(r"\b(alpha|bravo|charlie|delta|echo)\b")


class _NoEmbedder:
    model_name = "none"

    def encode(self, texts: Any) -> Any:
        raise AssertionError("judge metrics need no embeddings")


class Faults:
    """Scripted replies by (trace, judge task); everything else is answered well. Records
    the (trace, task) of every request."""

    def __init__(self, server: ScriptedLLM) -> None:
        self.faults: dict[tuple[str, str], Reply] = {}
        self.calls: list[tuple[str, str]] = []
        server.fallback = self.reply

    def reply(self, body: dict[str, Any]) -> Reply:
        text = prompt_text(body)
        task, trace = _TASK.search(text), _TRACE.search(text)
        key = (trace.group(1) if trace else "", task.group(1) if task else "")
        self.calls.append(key)
        return self.faults.get(key) or auto_reply(body)


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    engine = make_engine(db_url)
    yield engine
    engine.dispose()


def _add(factory: sessionmaker[Session], name: str, at: datetime) -> None:
    with factory() as session:
        add_trace(
            session,
            name,
            at,
            purposes=("judge",),
            question=f"What is {name}?",
            answer=f"{name} is a test answer.",
            contexts=[{"id": "d1", "text": f"{name} is described here."}],
        )
        session.commit()


class Observed:
    """An outcome observer recording every (trace, metric) it is told of."""

    def __init__(self) -> None:
        self.told: list[tuple[str, str]] = []

    def observe(self, evaluated: Sequence[Evaluated]) -> None:
        self.told.extend((e.trace_id, m) for e in evaluated for m in e.outcomes)


def _job(
    engine: Engine, server: ScriptedLLM, retries: int, observer: Observed | None = None
) -> IncrementalJob:
    """A fresh job object (as after a restart) over the database of `engine`."""
    settings = load_settings(
        judge={
            "models": ["openai/judge-a"],
            "api_base": server.base_url,
            "api_key": "sk-x",
            "max_retries": 0,
            "timeout_s": 0.5,
            "transient_retries": retries,
        },
    )
    factory = make_session_factory(engine)
    env = job_environment(
        settings,
        engine,
        embedder=_NoEmbedder(),
        judge=make_judge(settings.judge, factory),
        observers=[observer] if observer is not None else [],
    )
    return IncrementalJob(DEFINITION, env)


def _stored(engine: Engine, trace: str) -> dict[str, Any]:
    with make_session_factory(engine)() as session:
        row = session.scalars(select(JobOutcome).where(JobOutcome.trace_id == trace)).one()
        return dict(row.outcomes)


def _result(engine: Engine, metric: str) -> tuple[int, int]:
    """(n, errors) of the metric's latest 1h overall result."""
    with make_session_factory(engine)() as session:
        row = session.scalars(
            select(MetricResult)
            .where(
                MetricResult.metric == metric,
                MetricResult.window == "1h",
                MetricResult.group_key == "",
            )
            .order_by(MetricResult.id.desc())
            .limit(1)
        ).one()
        return row.n, row.errors


def _failed(engine: Engine, now: datetime) -> list[tuple[str, str | None]]:
    """(trace, error) of the window's failed answer_relevance outcomes (`--errors`)."""
    with make_session_factory(engine)() as session:
        rows = worst_traces(
            session,
            jobs=["judged"],
            metric="answer_relevance",
            since=now - timedelta(hours=1),
            until=now,
            errors=True,
        )
    return [(r.trace_id, r.error) for r in rows]


def test_transient_failures_wait_and_the_next_run_judges_them_without_paying_twice(
    engine: Engine, llm_server: ScriptedLLM
) -> None:
    """503, 429 and a timeout leave their traces waiting (not errors, not in n); the watermark
    moves past them, yet the next run with the judge healthy scores exactly the failed
    calls: the metrics that had succeeded come from the judgments cache."""
    factory = make_session_factory(engine)
    now = datetime.now(UTC)
    for name in ("alpha", "bravo", "charlie", "delta"):
        _add(factory, name, now - timedelta(minutes=30))
    _add(factory, "echo", now - timedelta(minutes=1))  # moves the watermark past GRACE
    faults = Faults(llm_server)
    faults.faults = {
        ("alpha", "answer_relevance"): Reply(status=503, content="overloaded"),
        ("bravo", "faithfulness_rating"): Reply(status=429, content="slow down"),
        ("charlie", "answer_relevance"): Reply(delay_s=1.5, content={"score": 1, "reason": "x"}),
    }
    registry = CollectorRegistry()
    observed = Observed()
    runner = JobRunner(
        {"judged": _job(engine, llm_server, 3, observed)},
        engine,
        operations=OperationsMetrics(registry),
    )

    first = runner.run("judged")
    assert (first.status, first.new_traces, first.pending_retry) == ("ok", 5, 3), first
    assert first.retries == {"answer_relevance": 2, "faithfulness_rating": 1}
    assert _stored(engine, "alpha")["answer_relevance"] == {
        "error": "server_error",
        "transient": True,
        "attempts": 1,
    }
    assert _stored(engine, "bravo")["faithfulness_rating"]["error"] == "rate_limited"
    assert _stored(engine, "charlie")["answer_relevance"]["error"] == "timeout"
    assert isinstance(_stored(engine, "alpha")["faithfulness_rating"], float)
    assert _result(engine, "answer_relevance") == (3, 0)  # bravo, delta, echo
    assert _result(engine, "faithfulness_rating") == (4, 0)
    sample = registry.get_sample_value
    retried = {"job": "judged", "metric": "answer_relevance"}
    assert sample("ragpulse_judge_retries_total", retried) == 2
    assert sample("ragpulse_judge_pending_retry", {"job": "judged"}) == 3

    faults.faults = {}
    faults.calls.clear()
    second = runner.run("judged")
    assert (second.status, second.new_traces, second.pending_retry) == ("ok", 3, 0), second
    assert second.retries == {}
    assert sorted(faults.calls) == [
        ("alpha", "answer_relevance"),
        ("bravo", "faithfulness_rating"),
        ("charlie", "answer_relevance"),
    ]
    assert _stored(engine, "charlie")["answer_relevance"] == 0.75
    assert _result(engine, "answer_relevance") == (5, 0)
    assert _result(engine, "faithfulness_rating") == (5, 0)
    assert sample("ragpulse_judge_pending_retry", {"job": "judged"}) == 0
    with factory() as session:  # the retried traces' first outcomes were moved out, once
        assert_buckets_match_outcomes(session, "judged")

    faults.calls.clear()
    third = runner.run("judged")
    assert (third.new_traces, faults.calls) == (0, [])
    # The observers (score histograms, OTel events) hear of each outcome once, when final.
    names = ("alpha", "bravo", "charlie", "delta", "echo")
    assert sorted(observed.told) == sorted((t, m) for t in names for m in METRICS)


def test_after_the_bound_the_error_is_final_and_restarts_keep_the_count(
    engine: Engine, llm_server: ScriptedLLM
) -> None:
    """With transient_retries = 2 a trace whose judge keeps answering 503 is tried by three
    runs, each by a new job object (a restart), then recorded as an error once."""
    factory = make_session_factory(engine)
    now = datetime.now(UTC)
    _add(factory, "alpha", now - timedelta(minutes=20))
    faults = Faults(llm_server)
    faults.faults = {("alpha", "answer_relevance"): Reply(status=503, content="down")}

    for attempt in (1, 2):
        report = _job(engine, llm_server, 2).run(now + timedelta(minutes=attempt))
        assert (report.new_traces, report.pending_retry) == (1, 1), report
        assert _stored(engine, "alpha")["answer_relevance"]["attempts"] == attempt
        assert _result(engine, "answer_relevance") == (0, 0)
        assert _failed(engine, now) == []  # `ragpulse traces --errors` does not list it yet
        assert shown(_stored(engine, "alpha")["answer_relevance"]) == "retrying: server_error"

    faults.calls.clear()
    final = _job(engine, llm_server, 2).run(now + timedelta(minutes=3))
    assert (final.new_traces, final.pending_retry, final.retries) == (1, 0, {}), final
    assert faults.calls == [("alpha", "answer_relevance")]  # faithfulness from the cache
    assert _stored(engine, "alpha")["answer_relevance"] == {"error": "server_error", "attempts": 3}
    assert _result(engine, "answer_relevance") == (0, 1)
    assert _result(engine, "faithfulness_rating") == (1, 0)
    assert _failed(engine, now) == [("alpha", "server_error")]
    assert shown(_stored(engine, "alpha")["answer_relevance"]) == "error: server_error"

    faults.calls.clear()
    after = _job(engine, llm_server, 2).run(now + timedelta(minutes=4))
    assert (after.new_traces, after.pending_retry, faults.calls) == (0, 0, [])
    assert _result(engine, "answer_relevance") == (0, 1)


def test_a_replica_sees_the_retry_another_one_made(engine: Engine, llm_server: ScriptedLLM) -> None:
    """Replica A leaves a trace waiting; replica B (its own process state) retries it;
    A's next run neither calls the judge again nor misses B's score in its windows."""
    factory = make_session_factory(engine)
    now = datetime.now(UTC)
    _add(factory, "alpha", now - timedelta(minutes=20))
    faults = Faults(llm_server)
    faults.faults = {("alpha", "answer_relevance"): Reply(status=503, content="down")}
    replica_a = _job(engine, llm_server, 3)
    assert replica_a.run(now).pending_retry == 1
    faults.faults = {}
    replica_b = _job(engine, llm_server, 3)
    assert replica_b.run(now + timedelta(minutes=1)).new_traces == 1
    faults.calls.clear()
    again = replica_a.run(now + timedelta(minutes=2))
    assert (again.new_traces, again.pending_retry, faults.calls) == (0, 0, [])
    assert _result(engine, "answer_relevance") == (1, 0)


def test_schema_and_refusal_errors_are_final_at_once(
    engine: Engine, llm_server: ScriptedLLM
) -> None:
    """A refusal and a reply of the wrong shape (also after the repair request) would be
    the same next time: recorded as errors by the first run, never retried."""
    factory = make_session_factory(engine)
    now = datetime.now(UTC)
    _add(factory, "alpha", now - timedelta(minutes=20))
    _add(factory, "bravo", now - timedelta(minutes=20))
    faults = Faults(llm_server)
    faults.faults = {
        ("alpha", "faithfulness_rating"): Reply(refusal="I cannot help with that."),
        ("bravo", "answer_relevance"): Reply(content={"verdict": "fine"}),
    }
    job = _job(engine, llm_server, 3)
    first = job.run(now)
    assert (first.new_traces, first.pending_retry, first.retries) == (2, 0, {}), first
    assert _stored(engine, "alpha")["faithfulness_rating"] == {"error": "refusal"}
    bravo = _stored(engine, "bravo")["answer_relevance"]
    assert bravo["error"] in ("schema_mismatch", "invalid_json") and "transient" not in bravo
    assert _result(engine, "faithfulness_rating") == (1, 1)
    assert _result(engine, "answer_relevance") == (1, 1)

    faults.faults = {}
    faults.calls.clear()
    second = _job(engine, llm_server, 3).run(now + timedelta(minutes=1))
    assert (second.new_traces, faults.calls) == (0, [])
