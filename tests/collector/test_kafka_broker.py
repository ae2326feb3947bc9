"""The embedded broker and the producer against the real Tansu binary."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kafka import KafkaConsumer, TopicPartition

from collector.kafka.broker import BrokerError, EmbeddedBroker, free_port
from collector.kafka.producer import (
    OutgoingMessage,
    RateLimiter,
    iter_jsonl,
    make_producer,
    publish,
)
from collector.settings import KafkaSettings
from tests.fixtures.broker import KafkaTopics


def _drain(bootstrap: str, topic: str, partitions: int, expected: int) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        consumer.seek_to_beginning()
        values: list[bytes] = []
        deadline = time.monotonic() + 15
        while len(values) < expected and time.monotonic() < deadline:
            for batch in consumer.poll(200).values():
                values.extend(record.value for record in batch)
        return values
    finally:
        consumer.close()


def test_topics_have_the_requested_partitions(kafka_topics: KafkaTopics) -> None:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=kafka_topics.bootstrap_servers)
    try:
        described = admin.describe_topics([kafka_topics.traces])
    finally:
        admin.close()
    assert len(described[0]["partitions"]) == 3


def test_jsonl_lines_are_published_byte_for_byte(kafka_topics: KafkaTopics, tmp_path: Path) -> None:
    question = "Кто?".encode()
    lines = [b'{"trace_id": "a", "question": "' + question + b'"}', b"{not json", b"\xff\xfe"]
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n\n")
    assert list(iter_jsonl(path)) == lines
    producer = make_producer(KafkaSettings(bootstrap_servers=[kafka_topics.bootstrap_servers]))
    try:
        progress: list[int] = []
        sent = publish(
            producer,
            [*iter_jsonl(path), OutgoingMessage(b"fb", topic=kafka_topics.feedback)],
            topic=kafka_topics.traces,
            on_sent=progress.append,
        )
    finally:
        producer.close()
    assert sent == 4 and sum(progress) == 4
    assert sorted(_drain(kafka_topics.bootstrap_servers, kafka_topics.traces, 3, 3)) == sorted(
        lines
    )
    assert _drain(kafka_topics.bootstrap_servers, kafka_topics.feedback, 3, 1) == [b"fb"]


def test_rate_limiter_spaces_calls() -> None:
    limiter = RateLimiter(50)
    start = time.monotonic()
    for _ in range(11):
        limiter.wait()
    assert time.monotonic() - start >= 0.19


def test_broker_stops_and_frees_its_port(tmp_path: Path) -> None:
    broker = EmbeddedBroker(port=free_port(), log_file=tmp_path / "b.log").start()
    pid = broker.pid
    assert broker.running() and pid is not None
    broker.create_topics(["x"], partitions=2)
    broker.create_topics(["x"], partitions=2)  # existing topics are left alone
    assert "x" in broker.list_topics()
    with pytest.raises(BrokerError, match="already in use"):
        EmbeddedBroker(port=broker.port).start()
    broker.stop()
    assert not broker.running()
    broker.stop()  # idempotent
    EmbeddedBroker(port=broker.port).start().stop()  # the port is free again
