"""The embedded broker and the producer against the real Tansu binary."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kafka import KafkaConsumer, TopicPartition

from collector.ingest.kafka.broker import BrokerError, EmbeddedBroker, free_port
from collector.ingest.kafka.producer import (
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


def test_broker_and_produce_commands(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPULSE_")}
    broker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ragpulse.cli",
            "broker",
            "--port",
            "0",
            "--partitions",
            "2",
            "--topics",
            "a,b",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert broker.stdout is not None
        first = broker.stdout.readline()
        assert first.startswith("broker ready: bootstrap servers 127.0.0.1:"), first
        bootstrap = first.rsplit(" ", 1)[1].strip()
        path = tmp_path / "in.jsonl"
        path.write_text('{"n": 1}\n{"n": 2}\n{"n": 3}\n', encoding="utf-8")
        produced = subprocess.run(
            [
                sys.executable,
                "-m",
                "ragpulse.cli",
                "produce",
                str(path),
                "--topic",
                "b",
                "--rate",
                "100",
            ],
            env={**env, "RAGPULSE_KAFKA__BOOTSTRAP_SERVERS": bootstrap},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert produced.returncode == 0, produced.stderr
        assert "published 3 messages to b" in produced.stderr
        assert sorted(_drain(bootstrap, "b", 2, 3)) == [b'{"n": 1}', b'{"n": 2}', b'{"n": 3}']
        missing = subprocess.run(
            [sys.executable, "-m", "ragpulse.cli", "produce", str(tmp_path / "nope.jsonl")],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert missing.returncode == 2 and "no such file" in missing.stderr
        broker.send_signal(signal.SIGINT)
        out, _ = broker.communicate(timeout=20)
    finally:
        if broker.poll() is None:
            broker.kill()
    assert broker.returncode == 0
    assert "broker stopped" in out
