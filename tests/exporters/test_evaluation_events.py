"""Evaluation events: real OTLP/HTTP export to a receiver the test starts, the bound, a
backend that is down, and configuration from the standard OTEL_EXPORTER_OTLP_* variables."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import Engine, func, select

from collector.jobs.recording.observers import Evaluated
from collector.jobs.run.definition import JobEnvironment
from collector.jobs.run.engine import IncrementalJob
from collector.jobs.scheduler import definitions
from collector.jobs.windows.window import parse_windows
from collector.settings import ConfigError, EvaluationEventsSettings, Settings, load_settings
from collector.store.models import JobOutcome, Judgment
from collector.store.session import make_engine, make_session_factory
from evaluators.outcome import Failed, Score, Skipped
from exporters.evaluation_events import EvaluationEvents, make_evaluation_events
from exporters.otlp_exporter import log_exporter
from tests.fixtures.otlp_receiver import OtlpReceiver, attributes
from tests.jobs.helpers import add_trace

OTLP_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
ROOT_SPAN = "00f067aa0ba902b7"
CHILD_SPAN = "a1b2c3d4e5f60718"
NOW = datetime.now(UTC)
DROPPED = "ragpulse_evaluation_events_dropped_total"


@pytest.fixture
def engine(sqlite_url: str) -> Iterator[Engine]:
    eng = make_engine(sqlite_url)
    yield eng
    eng.dispose()


def _otel_env(monkeypatch: pytest.MonkeyPatch, endpoint: str, **extra: str) -> None:
    for name in ("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    for name, value in extra.items():
        monkeypatch.setenv(name, value)


def _sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    value = registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


def _settings(**events: object) -> Settings:
    return load_settings(evaluation_events={"enabled": True, **events})


def _store_traces(engine: Engine) -> None:
    spans = {
        CHILD_SPAN: {"parent": ROOT_SPAN, "kind": "LLM", "name": "llm", "start": 5, "end": 9},
        ROOT_SPAN: {"parent": "", "kind": "CHAIN", "name": "rag", "start": 1, "end": 10},
    }
    with make_session_factory(engine)() as session:
        add_trace(session, OTLP_TRACE, NOW, source="otlp", spans=spans)
        add_trace(session, "order-42", NOW)
        session.add(
            Judgment(
                cache_key="k1",
                metric="faithfulness",
                model="m",
                prompt_version="v1",
                input_hash="h",
                temperature=0.1,
                trace_id=OTLP_TRACE,
                status="ok",
                parsed={"reason": "every claim is in context 1"},
            )
        )
        session.commit()


def test_events_reach_a_real_otlp_receiver(
    engine: Engine, otlp_receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    _otel_env(
        monkeypatch,
        otlp_receiver.endpoint,
        OTEL_EXPORTER_OTLP_HEADERS="x-team=search,authorization=Bearer%20t0ken",
        OTEL_EXPORTER_OTLP_COMPRESSION="gzip",
    )
    _store_traces(engine)
    registry = CollectorRegistry()
    settings = _settings(pass_thresholds={"faithfulness": 0.7, "mrr": 0.6})
    events = make_evaluation_events(settings, make_session_factory(engine), registry)
    assert events is not None
    events.observe(
        [
            Evaluated(
                "rag_quality",
                OTLP_TRACE,
                NOW.timestamp(),
                {"tenant": "acme"},
                {
                    "faithfulness": Score(0.8),
                    "answer_relevance": Failed("JudgeTimeoutError"),
                    "context_recall": Skipped("no reference"),
                },
            ),
            Evaluated("real_users_benchmark", "order-42", NOW.timestamp(), {}, {"mrr": Score(0.5)}),
        ]
    )
    assert events.flush(10)
    events.shutdown()

    records = otlp_receiver.records()
    by_name = {attributes(r)["gen_ai.evaluation.name"]: (res, r, sc) for res, r, sc in records}
    assert sorted(by_name) == ["answer_relevance", "faithfulness", "mrr"]  # no skipped event
    _res, faith, scope = by_name["faithfulness"]
    assert scope == "ragpulse.evaluation"
    assert _res["service.name"] == "ragpulse"
    assert faith.event_name == "gen_ai.evaluation.result"
    assert faith.trace_id == bytes.fromhex(OTLP_TRACE)
    assert faith.span_id == bytes.fromhex(ROOT_SPAN)  # the root, not the child
    assert faith.severity_number == 9 and faith.severity_text == "INFO"
    assert not faith.body.WhichOneof("value")
    assert faith.time_unix_nano > 0
    assert attributes(faith) == {
        "gen_ai.evaluation.name": "faithfulness",
        "gen_ai.evaluation.score.value": 0.8,
        "gen_ai.evaluation.score.label": "pass",
        "gen_ai.evaluation.explanation": "every claim is in context 1",
        "ragpulse.job": "rag_quality",
        "ragpulse.trace_id": OTLP_TRACE,
    }
    _res, failed, _scope = by_name["answer_relevance"]
    assert attributes(failed)["error.type"] == "JudgeTimeoutError"
    assert "gen_ai.evaluation.score.value" not in attributes(failed)
    assert failed.severity_text == "WARN"
    _res, mrr, _scope = by_name["mrr"]
    assert mrr.trace_id == b"" and mrr.span_id == b""  # not a W3C id: no trace context
    assert attributes(mrr)["ragpulse.trace_id"] == "order-42"
    assert attributes(mrr)["gen_ai.evaluation.score.label"] == "fail"
    # the standard variables were honoured: endpoint (we received it), headers, compression
    headers = {k.lower(): v for k, v in otlp_receiver.received[0].headers.items()}
    assert headers["x-team"] == "search"
    assert headers["authorization"] == "Bearer t0ken"
    assert headers["content-encoding"] == "gzip"
    assert _sample(registry, "ragpulse_evaluation_events_sent_total") == 3
    assert _sample(registry, "ragpulse_evaluation_events_dropped_total", reason="queue_full") == 0


def test_the_logs_specific_endpoint_wins(
    otlp_receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    _otel_env(monkeypatch, "http://127.0.0.1:9")  # discard port: nothing listens
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", otlp_receiver.endpoint + "/v1/logs")
    events = EvaluationEvents(_settings().evaluation_events, None, log_exporter())
    events.observe([Evaluated("ux", "t1", 0.0, {}, {"cache_hit_rate": Score(1.0)})])
    events.shutdown()
    assert len(otlp_receiver.records()) == 1
    assert events.counts.sent == 1


def _hanging_port() -> tuple[socket.socket, int]:
    """A port that accepts TCP connections (backlog) but never answers: a stuck backend."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock, sock.getsockname()[1]


@pytest.mark.slow
def test_the_queue_bound_holds_while_the_backend_hangs(monkeypatch: pytest.MonkeyPatch) -> None:
    sock, port = _hanging_port()
    try:
        _otel_env(monkeypatch, f"http://127.0.0.1:{port}", OTEL_EXPORTER_OTLP_TIMEOUT="2")
        registry = CollectorRegistry()
        cfg = EvaluationEventsSettings(enabled=True, queue_size=20, batch_size=5)
        events = EvaluationEvents(cfg, None, log_exporter()).register(registry)
        started = time.perf_counter()
        for i in range(100):
            events.observe([Evaluated("ux", f"t{i}", 0.0, {}, {"cache_hit_rate": Score(1.0)})])
        observed_s = time.perf_counter() - started
        # the first export hangs: 20 events are held, every further one dropped at once
        assert _sample(registry, DROPPED, reason="queue_full") == 80
        assert events.counts.held == 20
        assert observed_s < 0.5
        events.shutdown(timeout_s=1)
    finally:
        sock.close()
    dropped = sum(events.counts.dropped.values())
    assert events.counts.sent == 0 and dropped == 100
    assert events.counts.held == 0


def _free_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    sock.close()
    return port


def test_a_down_endpoint_costs_the_jobs_nothing(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    _otel_env(monkeypatch, f"http://127.0.0.1:{_free_port()}", OTEL_EXPORTER_OTLP_TIMEOUT="1")
    with make_session_factory(engine)() as session:
        for i in range(40):
            add_trace(
                session,
                f"t{i}",
                NOW - timedelta(minutes=i),
                purposes=("real_users_benchmark",),
                contexts=[{"id": "d1"}, {"id": "d2"}],
                relevant_ids=["d1"],
            )
        session.commit()
    settings = _settings(queue_size=50, batch_size=10)
    registry = CollectorRegistry()
    events = make_evaluation_events(settings, make_session_factory(engine), registry)
    assert events is not None
    env = JobEnvironment(
        session_factory=make_session_factory(engine),
        windows=parse_windows(settings.scheduler.windows),
        group_labels=settings.scheduler.group_labels,
        observers=(events,),
    )
    job = IncrementalJob(definitions(settings)["real_users_benchmark"], env)
    started = time.perf_counter()
    report = job.run(NOW)
    job_s = time.perf_counter() - started
    assert report.status == "ok" and report.new_traces == 40
    with make_session_factory(engine)() as session:
        stored = session.scalar(select(func.count()).select_from(JobOutcome))
    assert stored == 40
    assert job_s < 5  # the export's retries (1 s timeout) never ran in the job thread
    events.shutdown(timeout_s=5)
    per_trace = len(job.per_sample)
    total = 40 * per_trace
    reasons = ("queue_full", "export_failed", "shutdown")
    dropped = {r: _sample(registry, DROPPED, reason=r) for r in reasons}
    assert _sample(registry, "ragpulse_evaluation_events_sent_total") == 0
    assert sum(dropped.values()) == total
    assert dropped["queue_full"] >= total - 50  # at most queue_size were ever held
    assert dropped["export_failed"] > 0


def test_off_by_default_and_on_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert make_evaluation_events(load_settings(), None) is None
    with pytest.raises(ConfigError, match="batch_size"):
        load_settings(evaluation_events={"batch_size": 100, "queue_size": 10})
    monkeypatch.setenv("RAGPULSE_EVALUATION_EVENTS__ENABLED", "true")
    monkeypatch.setenv("RAGPULSE_EVALUATION_EVENTS__QUEUE_SIZE", "1024")
    cfg = load_settings().evaluation_events
    assert cfg.enabled and cfg.queue_size == 1024


def test_unsupported_protocols_are_clear_errors() -> None:
    with pytest.raises(ConfigError, match="not supported"):
        log_exporter({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})
    try:
        import opentelemetry.exporter.otlp.proto.grpc  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match="opentelemetry-exporter-otlp-proto-grpc"):
            log_exporter({"OTEL_EXPORTER_OTLP_LOGS_PROTOCOL": "grpc"})
    else:
        assert type(log_exporter({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})).__module__.startswith(
            "opentelemetry.exporter.otlp.proto.grpc"
        )


def test_the_service_emits_its_scheduled_jobs_scores(
    sqlite_url: str, otlp_receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ragpulse run`'s wiring: the observer is in the jobs' environment, its counters on
    /metrics, and stopping the service flushes the last run's events."""
    import urllib.request

    from ragpulse.monitoring import Monitoring

    _otel_env(monkeypatch, otlp_receiver.endpoint)
    settings = load_settings(
        database={"url": sqlite_url},
        exporter={"port": 0},
        scheduler={"interval_s": 3600, "initial_delay_s": 0, "jobs": ["real_users_benchmark"]},
        evaluation_events={"enabled": True},
    )
    engine = make_engine(sqlite_url)
    with make_session_factory(engine)() as session:
        add_trace(
            session,
            OTLP_TRACE,
            NOW - timedelta(minutes=1),
            purposes=("real_users_benchmark",),
            contexts=[{"id": "d1"}, {"id": "d2"}],
            relevant_ids=["d2"],
        )
        session.commit()
    registry = CollectorRegistry()
    monitoring = Monitoring(settings, engine, registry, role="scheduler").start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (
            monitoring.runner and "real_users_benchmark" in monitoring.runner.last
        ):
            time.sleep(0.1)
        assert monitoring.server is not None
        assert monitoring.maintenance is not None  # the scheduler role keeps the storage
        url = f"http://127.0.0.1:{monitoring.server.port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            body = response.read().decode()
        assert "ragpulse_evaluation_events_sent_total" in body
    finally:
        monitoring.stop()
        engine.dispose()
    names = {attributes(r)["gen_ai.evaluation.name"] for _res, r, _scope in otlp_receiver.records()}
    assert {"hit_rate@1", "mrr", "ndcg@10"} <= names
    assert _sample(registry, "ragpulse_evaluation_events_sent_total") == len(names)
