"""The consumer end to end: real embedded broker, real SQLite and PostgreSQL, real processes.

Covers at-least-once delivery with idempotent writes (duplicates, replays after SIGKILL),
dead letters for every kind of bad input, feedback in either order, a database outage in
the middle of a stream, graceful SIGTERM with offsets committed, and `ragpulse ingest`.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from kafka import KafkaConsumer, TopicPartition
from prometheus_client import CollectorRegistry
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from collector.ingest.kafka.producer import OutgoingMessage, encode_record, make_producer, publish
from collector.settings import KafkaSettings, Settings, load_settings
from ragpulse.demo.knowledge import QUESTIONS
from ragpulse.demo.otlp import otlp_trace_messages
from ragpulse.service import Service
from tests.collector.traces import make_feedback, trace_bytes, trace_id
from tests.fixtures.broker import KafkaTopics
from tests.fixtures.db import postgres_admin_url

pytestmark = pytest.mark.timeout(120)


def _produce(topics: KafkaTopics, messages: Iterable[OutgoingMessage | bytes]) -> int:
    producer = make_producer(KafkaSettings(bootstrap_servers=[topics.bootstrap_servers]))
    try:
        return publish(producer, messages, topic=topics.traces)
    finally:
        producer.close()


def _settings(db_url: str, topics: KafkaTopics, **kafka: Any) -> Settings:
    return load_settings(database={"url": db_url}, kafka=topics.kafka_settings(**kafka))


def _ingest(settings: Settings, idle_s: float = 1.0) -> Service:
    service = Service(settings, registry=CollectorRegistry())
    service.run(idle_timeout_s=idle_s)
    return service


def _scalar(url: str, sql: str) -> Any:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(text(sql)).scalar()
    finally:
        engine.dispose()


def _trace_ids(url: str) -> list[str]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return [row[0] for row in conn.execute(text("SELECT trace_id FROM traces"))]
    finally:
        engine.dispose()


def _wait_for(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")


def _committed(topics: KafkaTopics) -> dict[tuple[str, int], int]:
    """The group's committed offset per partition of the test's topics (0 when none)."""
    consumer = KafkaConsumer(
        bootstrap_servers=topics.bootstrap_servers,
        group_id=topics.group_id,
        enable_auto_commit=False,
    )
    try:
        return {
            (topic, partition): consumer.committed(TopicPartition(topic, partition)) or 0
            for topic in topics.all
            for partition in range(3)
        }
    finally:
        consumer.close(autocommit=False)


def _ragpulse(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RAGPULSE_")}
    return subprocess.Popen(
        [sys.executable, "-m", "ragpulse.cli", *args],
        env={**clean, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _otlp(topics: KafkaTopics, seed: int) -> tuple[list[OutgoingMessage], str]:
    rng = random.Random(seed)
    messages = otlp_trace_messages(
        rng,
        tenant="bank",
        question=QUESTIONS["bank"][0],
        contexts=[{"id": "bank-cards-limits", "text": "Лимит 300 000 рублей.", "score": 0.9}],
        model="gigachat-pro",
        session_id="otel-session",
        at=datetime(2026, 11, 20, 9, 0, tzinfo=UTC),
        topic=topics.otlp,
    )
    assert messages[0].key is not None
    return messages, messages[0].key.decode()


@pytest.mark.slow
def test_json_and_otlp_traces_are_stored_once(db_url: str, kafka_topics: KafkaTopics) -> None:
    otlp, otlp_trace_id = _otlp(kafka_topics, seed=1)
    messages: list[OutgoingMessage | bytes] = [trace_bytes(i) for i in range(20)]
    messages += [trace_bytes(i, "en") for i in range(5)]  # the same trace ids again
    messages += otlp
    assert _produce(kafka_topics, messages) == 27

    service = _ingest(_settings(db_url, kafka_topics))
    summary = service.stats.summary()
    assert summary["consumed"] == 27
    assert summary["stored"] == 22  # 20 JSON traces, and both OTLP messages brought new spans
    assert summary["invalid"] == 0
    assert summary["duplicates"] == 5
    assert sorted(_trace_ids(db_url)) == sorted([trace_id(i) for i in range(20)] + [otlp_trace_id])
    otlp_question = _scalar(
        db_url, f"SELECT question FROM traces WHERE trace_id = '{otlp_trace_id}'"
    )
    assert otlp_question == QUESTIONS["bank"][0].text

    registry = service.registry
    assert registry.get_sample_value("ragpulse_traces_stored_total") == 22
    assert (
        registry.get_sample_value("ragpulse_traces_consumed_total", {"topic": kafka_topics.traces})
        == 25
    )
    # Everything consumed is committed, and the lag gauge says so.
    for partition in range(3):
        lag = registry.get_sample_value(
            "ragpulse_consumer_lag", {"topic": kafka_topics.traces, "partition": str(partition)}
        )
        assert lag == 0
    # A second run of the same group finds nothing new.
    again = _ingest(_settings(db_url, kafka_topics)).stats.summary()
    assert again["consumed"] == 0


@pytest.mark.slow
def test_feedback_before_and_after_its_trace(sqlite_url: str, kafka_topics: KafkaTopics) -> None:
    early = make_feedback(1, judge_label=False, rating=1, comment="Ответ неверный")
    late = make_feedback(2, judge_label=True, rating=5)
    _produce(kafka_topics, [OutgoingMessage(encode_record(early), kafka_topics.feedback)])
    _ingest(_settings(sqlite_url, kafka_topics))
    _produce(
        kafka_topics,
        [
            trace_bytes(1),
            trace_bytes(2),
            OutgoingMessage(encode_record(late), kafka_topics.traces),
        ],
    )
    _ingest(_settings(sqlite_url, kafka_topics))
    rows = _scalar(
        sqlite_url,
        "SELECT group_concat(trace_id || ':' || judge_label || ':' || feedback_rating, ',') "
        "FROM (SELECT * FROM traces ORDER BY trace_id)",
    )
    assert rows == f"{trace_id(1)}:0:1.0,{trace_id(2)}:1:5.0"


BAD_INPUTS = {
    "invalid_json": b'{"trace_id": "x", "question": ',
    "missing_field": json.dumps({"trace_id": "x", "timestamp": "2026-01-01T00:00:00Z"}).encode(),
    "wrong_type": json.dumps(
        {"trace_id": "x", "timestamp": "2026-01-01T00:00:00Z", "question": 42}
    ).encode(),
    "not_utf8": "Где мой заказ?".encode("cp1251"),
    "empty": b"",
    "oversized": trace_bytes(99, size_bytes=8000),  # max_message_bytes is 4096 below
}


@pytest.mark.parametrize("reason", sorted(BAD_INPUTS))
def test_bad_input_goes_to_dead_letters_and_the_next_message_is_stored(
    reason: str, sqlite_url: str, kafka_topics: KafkaTopics
) -> None:
    raw = BAD_INPUTS[reason]
    key = b"same-partition"
    _produce(
        kafka_topics,
        [
            OutgoingMessage(raw, kafka_topics.traces, key),
            OutgoingMessage(trace_bytes(7), kafka_topics.traces, key),
        ],
    )
    service = _ingest(_settings(sqlite_url, kafka_topics, max_message_bytes=4096))
    assert service.stats.summary()["invalid"] == 1
    assert _scalar(sqlite_url, "SELECT reason FROM dead_letters") == reason
    assert _scalar(sqlite_url, "SELECT raw FROM dead_letters") == raw
    assert _trace_ids(sqlite_url) == [trace_id(7)]
    assert (
        service.registry.get_sample_value("ragpulse_traces_invalid_total", {"reason": reason}) == 1
    )


def test_ingest_command_prints_a_json_summary(sqlite_url: str, kafka_topics: KafkaTopics) -> None:
    _produce(kafka_topics, [trace_bytes(i) for i in range(10)] + [trace_bytes(3), b"{oops"])
    process = _ragpulse(["ingest", "--until-idle", "1"], kafka_topics.env(sqlite_url))
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    summary = json.loads(out)
    assert summary == {
        "consumed": 12,
        "stored": 10,
        "duplicates": 1,
        "feedback": 0,
        "invalid": 1,
        "sampled": summary["sampled"],
        "unstored": 0,
    }
    assert sum(_committed(kafka_topics).values()) == 12


def _background_producer(topics: KafkaTopics, values: list[bytes], rate: float) -> threading.Thread:
    thread = threading.Thread(target=_produce_at, args=(topics, values, rate), daemon=True)
    thread.start()
    return thread


def _produce_at(topics: KafkaTopics, values: list[bytes], rate: float) -> None:
    producer = make_producer(KafkaSettings(bootstrap_servers=[topics.bootstrap_servers]))
    try:
        publish(producer, values, topic=topics.traces, rate=rate)
    finally:
        producer.close()


@pytest.mark.slow
def test_sigkill_mid_stream_then_restart_loses_nothing_and_stores_nothing_twice(
    sqlite_url: str, kafka_topics: KafkaTopics
) -> None:
    total = 3000
    env = {**kafka_topics.env(sqlite_url), "RAGPULSE_KAFKA__MAX_POLL_RECORDS": "100"}
    producer = _background_producer(kafka_topics, [trace_bytes(i) for i in range(total)], 1500)
    first = _ragpulse(["run"], env)
    try:
        _wait_for(
            lambda: (_scalar(sqlite_url, "SELECT count(*) FROM traces") or 0) > 300,
            30,
            "the first consumer to store some traces",
        )
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    finally:
        if first.poll() is None:
            first.kill()
    stored_at_kill = _scalar(sqlite_url, "SELECT count(*) FROM traces")
    assert stored_at_kill < total
    producer.join(30)

    second = _ragpulse(["run"], env)
    try:
        _wait_for(
            lambda: _scalar(sqlite_url, "SELECT count(*) FROM traces") == total,
            60,
            "the restarted consumer to store every trace",
        )
        second.send_signal(signal.SIGTERM)
        _, err = second.communicate(timeout=30)
    finally:
        if second.poll() is None:
            second.kill()
    assert second.returncode == 0, err
    assert sorted(_trace_ids(sqlite_url)) == [trace_id(i) for i in range(total)]
    assert _scalar(sqlite_url, "SELECT count(*) FROM dead_letters") == 0
    # Graceful stop: every consumed offset is committed.
    assert sum(_committed(kafka_topics).values()) == total


@pytest.mark.slow
def test_graceful_sigterm_commits_and_exits_zero(
    sqlite_url: str, kafka_topics: KafkaTopics
) -> None:
    _produce(kafka_topics, [trace_bytes(i) for i in range(50)])
    process = _ragpulse(["run"], kafka_topics.env(sqlite_url))
    try:
        _wait_for(
            lambda: _scalar(sqlite_url, "SELECT count(*) FROM traces") == 50,
            30,
            "the consumer to store the traces",
        )
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert "stopping after the current batch" in err
    assert sum(_committed(kafka_topics).values()) == 50


@pytest.fixture
def blockable_postgres(postgres_url: str) -> Iterator[tuple[str, Callable[[bool], None]]]:
    """The test database and a switch that cuts it off (and ends its sessions) or restores it."""
    name = make_url(postgres_url).database
    admin = create_engine(postgres_admin_url(), isolation_level="AUTOCOMMIT")

    def allow(connections: bool) -> None:
        with admin.connect() as conn:
            conn.execute(
                text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {str(connections).lower()}')
            )
            if not connections:
                conn.execute(
                    text(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = :name AND pid <> pg_backend_pid()"
                    ),
                    {"name": name},
                )

    try:
        yield postgres_url, allow
    finally:
        allow(True)
        admin.dispose()


@pytest.mark.slow
def test_database_outage_is_retried_without_loss(
    blockable_postgres: tuple[str, Callable[[bool], None]],
    kafka_topics: KafkaTopics,
    caplog: pytest.LogCaptureFixture,
) -> None:
    url, allow = blockable_postgres
    settings = _settings(url, kafka_topics, max_poll_records=50, retry_initial_s=0.3)
    service = Service(settings, registry=CollectorRegistry())
    thread = threading.Thread(target=service.run, daemon=True)
    thread.start()
    try:
        _produce(kafka_topics, [trace_bytes(i) for i in range(100)])
        _wait_for(lambda: _scalar(url, "SELECT count(*) FROM traces") == 100, 30, "first batch")
        allow(False)
        _produce(kafka_topics, [trace_bytes(i) for i in range(100, 400)])
        # Longer than max_poll_interval_ms (4 s): the paused consumer must stay in the group.
        _wait_for(
            lambda: (
                (
                    service.registry.get_sample_value(
                        "ragpulse_consumer_errors_total", {"kind": "database_unavailable"}
                    )
                    or 0
                )
                >= 3
            ),
            30,
            "retries while the database is away",
        )
        time.sleep(2.5)
        allow(True)
        _wait_for(lambda: _scalar(url, "SELECT count(*) FROM traces") == 400, 60, "recovery")
    finally:
        service.request_stop()
        thread.join(30)
    assert not thread.is_alive()
    assert sorted(_trace_ids(url)) == sorted(trace_id(i) for i in range(400))
    assert "database unavailable, retrying in" in caplog.text
    assert service.stats.totals.stored == 400
    assert sum(_committed(kafka_topics).values()) == 400


class _FailsOnce:
    """Delegates to the real ingestor but raises a bug-like error on the first batch."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0

    def decode(self, messages: Any) -> Any:
        return self.inner.decode(messages)

    def store(self, session: Any, decoded: Any) -> Any:
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("simulated bug in a batch")
        return self.inner.store(session, decoded)

    def ingest_batch(self, session: Any, messages: Any) -> Any:
        return self.store(session, self.decode(messages))


def test_any_other_batch_failure_is_logged_counted_and_retried(
    sqlite_url: str, kafka_topics: KafkaTopics, caplog: pytest.LogCaptureFixture
) -> None:
    _produce(kafka_topics, [trace_bytes(i) for i in range(30)])
    settings = _settings(sqlite_url, kafka_topics, retry_initial_s=0.1)
    service = Service(settings, registry=CollectorRegistry())
    service.consumer.ingestor = _FailsOnce(service.consumer.ingestor)  # type: ignore[assignment]
    service.run(idle_timeout_s=1.0)
    assert sorted(_trace_ids(sqlite_url)) == sorted(trace_id(i) for i in range(30))
    errors = service.registry.get_sample_value(
        "ragpulse_consumer_errors_total", {"kind": "ingest_error"}
    )
    assert errors == 1
    assert "simulated bug in a batch" in caplog.text and "Traceback" in caplog.text
    assert sum(_committed(kafka_topics).values()) == 30
