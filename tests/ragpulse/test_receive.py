"""The OTLP/HTTP receiver over real HTTP and the embedded broker: what it writes to Kafka
and when it answers, the limits, the refusals and their OTLP bodies, auth and TLS, Kafka
away, graceful stop, and `ragpulse receive` as a command."""

from __future__ import annotations

import base64
import gzip
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import tracemalloc
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.rpc.status_pb2 import Status
from kafka import KafkaConsumer, TopicPartition
from prometheus_client import CollectorRegistry

from collector.ingest.kafka.broker import EmbeddedBroker, free_port
from collector.settings import Settings, load_settings
from ragpulse.receiver import Receiver
from tests.collector.evaluation_messages import evaluation_logs
from tests.collector.otlp_traces import json_message, proto_message, rag_spans, trace_hex
from tests.exporters.test_http import tls_cert  # noqa: F401  (a fixture)
from tests.fixtures.broker import KafkaTopics

pytestmark = pytest.mark.timeout(120)

PROTOBUF = "application/x-protobuf"
JSON = "application/json"


def _settings(topics: KafkaTopics, **receiver: Any) -> Settings:
    return load_settings(
        kafka=topics.kafka_settings(otlp_logs_topic=f"{topics.otlp}.logs"),
        receiver={"port": 0, **receiver},
    )


@pytest.fixture
def receiver(kafka_topics: KafkaTopics) -> Iterator[Receiver]:
    started = Receiver(_settings(kafka_topics), CollectorRegistry()).start()
    try:
        yield started
    finally:
        started.stop()


def post(
    url: str,
    body: bytes,
    content_type: str = PROTOBUF,
    headers: dict[str, str] | None = None,
    context: ssl.SSLContext | None = None,
) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(
        url, data=body, headers={"Content-Type": content_type, **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def status_of(body: bytes, content_type: str) -> tuple[int, str]:
    """(gRPC code, message) of a `google.rpc.Status` answer in either encoding."""
    if content_type == JSON:
        obj = json.loads(body)
        return obj["code"], obj["message"]
    message = Status()
    message.ParseFromString(body)
    return message.code, message.message


def consumed(topic: str, bootstrap: str, count: int, timeout_s: float = 15) -> list[Any]:
    """The first `count` records of `topic` (all partitions), waiting up to `timeout_s`."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        records: list[Any] = []
        deadline = time.monotonic() + timeout_s
        while len(records) < count and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=200).values():
                records.extend(batch)
        return records
    finally:
        consumer.close()


def sample(receiver: Receiver, name: str, labels: dict[str, str]) -> float:
    return receiver.registry.get_sample_value(name, labels) or 0.0


def test_protobuf_and_json_exports_are_in_kafka_when_answered(
    receiver: Receiver, kafka_topics: KafkaTopics
) -> None:
    spans = rag_spans()
    bodies = [(proto_message(spans), PROTOBUF), (json_message(spans), JSON)]
    for body, kind in bodies:
        status, headers, answer = post(receiver.url + "/v1/traces", body, kind)
        assert status == 200 and headers["Content-Type"] == kind
        assert answer == (b"" if kind == PROTOBUF else b"{}")  # ExportTraceServiceResponse
    logs = evaluation_logs([(int(trace_hex(spans), 16), {"gen_ai.evaluation.name": "x"})])
    assert post(receiver.url + "/v1/logs", logs)[0] == 200
    # answered 200 means acknowledged: the records are there, byte for byte, keyed by trace
    records = consumed(kafka_topics.otlp, kafka_topics.bootstrap_servers, 2)
    assert sorted(r.value for r in records) == sorted(body for body, _ in bodies)
    assert {r.key for r in records} == {trace_hex(spans).encode()}
    assert len({r.partition for r in records}) == 1  # one trace, one partition
    (log,) = consumed(f"{kafka_topics.otlp}.logs", kafka_topics.bootstrap_servers, 1)
    assert log.value == logs and log.key == trace_hex(spans).encode()
    # an empty export is answered without a write
    assert post(receiver.url + "/v1/traces", b"")[0] == 200
    assert post(receiver.url + "/v1/traces", b"{}", JSON)[0] == 200
    traces = {"signal": "traces", "code": "200"}
    assert sample(receiver, "ragpulse_receiver_requests_total", traces) == 4
    assert sample(receiver, "ragpulse_receiver_spans_total", {"outcome": "accepted"}) == 6
    assert sample(receiver, "ragpulse_receiver_log_records_total", {"outcome": "accepted"}) == 2
    assert sample(receiver, "ragpulse_receiver_kafka_ack_seconds_count", {}) == 3


def test_gzip_bodies_are_written_decompressed(
    receiver: Receiver, kafka_topics: KafkaTopics
) -> None:
    body = proto_message(rag_spans())
    # two concatenated gzip members are one body (RFC 1952)
    packed = gzip.compress(body[:100]) + gzip.compress(body[100:])
    status, _, _ = post(receiver.url + "/v1/traces", packed, headers={"Content-Encoding": "gzip"})
    assert status == 200
    (record,) = consumed(kafka_topics.otlp, kafka_topics.bootstrap_servers, 1)
    assert record.value == body


def test_bodies_past_the_limit_are_413_and_a_gzip_bomb_stays_small(
    receiver: Receiver, kafka_topics: KafkaTopics
) -> None:
    url, limit = receiver.url + "/v1/traces", 1024 * 1024  # kafka.max_message_bytes
    status, _, answer = post(url, b"\x0a" * (limit + 1))
    assert status == 413
    assert f"{limit + 1} bytes, the limit is {limit}" in status_of(answer, PROTOBUF)[1]
    # 256 MiB of zeros in 256 KB: refused while inflating, just past 1 MiB
    bomb = gzip.compress(bytes(256 * 1024 * 1024), compresslevel=9)
    assert len(bomb) < limit
    tracemalloc.start()
    try:
        status, _, answer = post(url, bomb, headers={"Content-Encoding": "gzip"})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert status == 413 and "inflates past the limit" in status_of(answer, PROTOBUF)[1]
    assert peak < 3 * limit + 2 * len(bomb), peak
    too_large = {"signal": "traces", "code": "413"}
    assert sample(receiver, "ragpulse_receiver_requests_total", too_large) == 2
    assert consumed(kafka_topics.otlp, kafka_topics.bootstrap_servers, 1, timeout_s=1) == []


@pytest.mark.parametrize(
    ("body", "kind", "headers", "reason"),
    [
        (b"garbage that is no protobuf", PROTOBUF, {}, "not a protobuf ExportTraceServiceRequest"),
        (b'{"resourceSpans": []}', PROTOBUF, {}, "starts with '{'"),
        (b"\x7a\x03abc", PROTOBUF, {}, "no field of it"),  # an unknown field only
        (b"{not json", JSON, {}, "not JSON"),
        (b"[1, 2]", JSON, {}, "the top level is not an object"),
        (b'{"resourceSpans": "x"}', JSON, {}, "resourceSpans: expected an array"),
        (b'{"resourceSpans": [{"scopeSpans": [7]}]}', JSON, {}, "scopeSpans[0]: expected an"),
        (b'{"resource_spans": []}', JSON, {}, "lowerCamelCase"),
        (
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz!"}]}]}]}',
            JSON,
            {},
            "traceId",
        ),
        (b"\x1f\x8b\x08\x00broken", PROTOBUF, {"Content-Encoding": "gzip"}, "not valid gzip"),
    ],
)
def test_a_body_that_is_no_export_request_is_400_with_a_one_line_status(
    receiver: Receiver,
    body: bytes,
    kind: str,
    headers: dict[str, str],
    reason: str,
) -> None:
    status, answer_headers, answer = post(receiver.url + "/v1/traces", body, kind, headers)
    assert status == 400 and answer_headers["Content-Type"] == kind
    code, message = status_of(answer, kind)
    assert code == 3 and reason in message and "\n" not in message  # INVALID_ARGUMENT


def test_other_content_types_and_encodings_are_415(receiver: Receiver) -> None:
    body = proto_message(rag_spans())
    for kind, headers in (
        ("text/plain", {}),
        ("application/grpc", {}),
        (PROTOBUF, {"Content-Encoding": "br"}),
    ):
        status, _, answer = post(receiver.url + "/v1/traces", body, kind, headers)
        assert status == 415
        answer_kind = PROTOBUF if kind == PROTOBUF else JSON
        assert "not supported" in status_of(answer, answer_kind)[1]
    assert post(receiver.url + "/v1/metrics", body)[0] == 404  # not a signal ragpulse takes
    request = urllib.request.Request(receiver.url + "/v1/traces", method="GET")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 405 and refused.value.headers["Allow"] == "POST"


def test_basic_auth_guards_the_exports_but_not_the_probes(kafka_topics: KafkaTopics) -> None:
    receiver = Receiver(
        _settings(kafka_topics, basic_auth_username="app", basic_auth_password="s3cret"),
        CollectorRegistry(),
    ).start()
    try:
        url, body = receiver.url, proto_message(rag_spans())
        good = "Basic " + base64.b64encode(b"app:s3cret").decode()
        bad = "Basic " + base64.b64encode(b"app:wrong").decode()
        status, headers, _ = post(url + "/v1/traces", body)
        assert status == 401 and headers["WWW-Authenticate"].startswith("Basic")
        assert post(url + "/v1/traces", body, headers={"Authorization": bad})[0] == 401
        assert post(url + "/v1/traces", body, headers={"Authorization": good})[0] == 200
        with pytest.raises(urllib.error.HTTPError) as metrics:
            urllib.request.urlopen(url + "/metrics", timeout=10)
        assert metrics.value.code == 401
        for probe in ("/healthz", "/readyz"):
            with urllib.request.urlopen(url + probe, timeout=10) as response:
                assert response.status == 200
        refused = {"signal": "traces", "code": "401"}
        assert sample(receiver, "ragpulse_receiver_requests_total", refused) == 2
    finally:
        receiver.stop()


def test_tls(kafka_topics: KafkaTopics, tls_cert: tuple[Path, Path]) -> None:  # noqa: F811
    cert, key = tls_cert
    receiver = Receiver(
        _settings(kafka_topics, tls_cert_file=cert, tls_key_file=key), CollectorRegistry()
    ).start()
    try:
        assert receiver.url.startswith("https://")
        context = ssl.create_default_context(cafile=str(cert))
        context.check_hostname = False
        body = proto_message(rag_spans())
        assert post(receiver.url + "/v1/traces", body, context=context)[0] == 200
    finally:
        receiver.stop()


def test_kafka_never_reachable_is_503_with_retry_after(kafka_topics: KafkaTopics) -> None:
    nowhere = f"127.0.0.1:{free_port()}"
    settings = load_settings(
        kafka={**kafka_topics.kafka_settings(), "bootstrap_servers": [nowhere]},
        receiver={"port": 0, "ack_timeout_s": 1.0, "retry_after_s": 7},
    )
    receiver = Receiver(settings, CollectorRegistry()).start()  # starts all the same
    try:
        body = proto_message(rag_spans())
        for _ in range(2):
            status, headers, answer = post(receiver.url + "/v1/traces", body)
            assert status == 503 and headers["Retry-After"] == "7"
            code, message = status_of(answer, PROTOBUF)
            assert code == 14 and "Kafka" in message  # UNAVAILABLE
        with pytest.raises(urllib.error.HTTPError) as ready:
            urllib.request.urlopen(receiver.url + "/readyz", timeout=10)
        assert ready.value.code == 503 and "kafka" in json.loads(ready.value.read())["checks"]
        assert sample(receiver, "ragpulse_receiver_spans_total", {"outcome": "refused"}) == 6
    finally:
        receiver.stop()


def test_kafka_going_down_is_503_and_coming_back_is_200(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = EmbeddedBroker(port=0, log_file=tmp_path / "broker.log").start()
    port = int(broker.bootstrap_servers.rsplit(":", 1)[1])
    settings = load_settings(
        kafka={"bootstrap_servers": [broker.bootstrap_servers], "otlp_topic": "spans"},
        receiver={"port": 0, "ack_timeout_s": 2.0},
    )
    receiver = Receiver(settings, CollectorRegistry()).start()
    try:
        body = proto_message(rag_spans())
        assert post(receiver.url + "/v1/traces", body)[0] == 200
        broker.stop()
        status, headers, _ = post(receiver.url + "/v1/traces", body)
        assert status == 503 and headers["Retry-After"] == "5"
        # the old connections' TIME_WAIT fails the fixture's bind check (without
        # SO_REUSEADDR); the broker itself rebinds the port
        monkeypatch.setattr("collector.ingest.kafka.broker.port_is_free", lambda *_: True)
        broker = EmbeddedBroker(port=port, log_file=tmp_path / "broker2.log").start()
        deadline = time.monotonic() + 30
        while post(receiver.url + "/v1/traces", body)[0] != 200:  # the client's retries
            assert time.monotonic() < deadline
            time.sleep(0.5)
    finally:
        receiver.stop()
        broker.stop()


def test_stop_lets_the_request_in_flight_finish(receiver: Receiver) -> None:
    body = proto_message(rag_spans())
    head = (
        f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: {PROTOBUF}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    host, port = receiver.url.split("//")[1].split(":")
    with socket.create_connection((host, int(port)), timeout=20) as conn:
        conn.sendall(head + body[:50])
        time.sleep(0.2)  # the request is being read
        stopping = threading.Thread(target=receiver.stop)
        stopping.start()
        time.sleep(1.0)  # serve_forever polls its stop flag every 0.5 s
        with pytest.raises(OSError):  # no new connection is accepted any more
            socket.create_connection((host, int(port)), timeout=2).close()
        assert stopping.is_alive()  # stop() waits for the request in flight
        conn.sendall(body[50:])
        answer = conn.recv(4096)
    stopping.join(10)
    assert not stopping.is_alive()
    assert answer.startswith(b"HTTP/1.0 200 ")


def _ragpulse(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RAGPULSE_")}
    return subprocess.Popen(
        [sys.executable, "-m", "ragpulse.cli", *args],
        env={**clean, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("argv", [["receive"], ["run", "--role", "receiver"]])
def test_the_command_receives_until_sigterm(kafka_topics: KafkaTopics, argv: list[str]) -> None:
    env = {
        "RAGPULSE_KAFKA__BOOTSTRAP_SERVERS": kafka_topics.bootstrap_servers,
        "RAGPULSE_KAFKA__OTLP_TOPIC": kafka_topics.otlp,
        "RAGPULSE_RECEIVER__PORT": "0",
    }
    process = _ragpulse(argv, env)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("receiving OTLP/HTTP on http://127.0.0.1:"), line
        url = line.split()[3].rstrip(":")
        assert post(url + "/v1/traces", proto_message(rag_spans()))[0] == 200
        with urllib.request.urlopen(url + "/metrics", timeout=10) as response:
            assert (
                'ragpulse_receiver_spans_total{outcome="accepted"} 3.0' in response.read().decode()
            )
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert "receiver stopped" in out
    assert len(consumed(kafka_topics.otlp, kafka_topics.bootstrap_servers, 1)) == 1


def test_the_port_taken_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        process = _ragpulse(["receive"], {"RAGPULSE_RECEIVER__PORT": str(port)})
        _, err = process.communicate(timeout=60)
    assert process.returncode == 2 and "Traceback" not in err
    assert err.strip() == (
        f"ragpulse: cannot serve OTLP/HTTP on 127.0.0.1:{port}: Address already in use "
        "(choose another RAGPULSE_RECEIVER__HOST/PORT)"
    )
