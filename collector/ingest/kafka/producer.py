"""Publish trace records to Kafka (JSONL files, Python records, raw bytes), optionally rate-limited.

Used by `ragpulse produce`, the demo's traffic generator, tests and benchmarks. Values are
sent as given: a JSONL line is published byte for byte (a malformed line stays malformed,
which is what a dead-letter test needs).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collector.settings import KafkaSettings


@dataclass(frozen=True)
class OutgoingMessage:
    """One message to publish; `topic=None` means the producer's default topic."""

    value: bytes
    topic: str | None = None
    key: bytes | None = None


def kafka_security_options(kafka: KafkaSettings) -> dict[str, Any]:
    """Connection options shared by producer and consumer (security, client id)."""
    options: dict[str, Any] = {
        "bootstrap_servers": list(kafka.bootstrap_servers),
        "client_id": kafka.client_id,
        "security_protocol": kafka.security_protocol,
    }
    if kafka.sasl_mechanism:
        options["sasl_mechanism"] = kafka.sasl_mechanism
        options["sasl_plain_username"] = kafka.sasl_username
        if kafka.sasl_password is not None:
            options["sasl_plain_password"] = kafka.sasl_password.get_secret_value()
    return options


def make_producer(kafka: KafkaSettings, **overrides: Any) -> Any:
    """A `KafkaProducer` for the configured cluster, batching for throughput."""
    from kafka import KafkaProducer

    options = kafka_security_options(kafka)
    options.update(
        {
            "acks": 1,
            "enable_idempotence": False,  # acks=1 excludes it; say so instead of a warning
            "linger_ms": 10,
            "batch_size": 256 * 1024,
            "max_request_size": max(kafka.max_message_bytes + 4096, 1024 * 1024),
        }
    )
    options.update(overrides)
    return KafkaProducer(**options)


def encode_record(record: Any) -> bytes:
    """A JSON-serialisable record as compact UTF-8 JSON; bytes are passed through."""
    if isinstance(record, bytes):
        return record
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def iter_jsonl(path: str | Path) -> Iterator[bytes]:
    """Each non-blank line of a JSONL file as raw bytes (no decoding, no validation)."""
    with open(path, "rb") as handle:
        for line in handle:
            stripped = line.strip()
            if stripped:
                yield stripped


class RateLimiter:
    """Spaces calls to at most `rate` per second (`None` or 0: unlimited)."""

    def __init__(self, rate: float | None, clock: Callable[[], float] = time.monotonic) -> None:
        self._interval = 1.0 / rate if rate else 0.0
        self._clock = clock
        self._next = clock()

    def wait(self) -> None:
        if not self._interval:
            return
        now = self._clock()
        if self._next > now:
            time.sleep(self._next - now)
            now = self._next
        # Never bank more than a second of credit after a pause.
        self._next = max(self._next + self._interval, now - 1.0 + self._interval)


def publish(
    producer: Any,
    messages: Iterable[OutgoingMessage | bytes],
    *,
    topic: str,
    rate: float | None = None,
    on_sent: Callable[[int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> int:
    """Send every message (to `topic` unless it names its own); flush; return how many.

    `on_sent(n)` is called as messages go out (progress bars); `should_stop()` ends early.
    Delivery errors surface from the final `flush` / the futures as `KafkaError`s.
    """
    limiter = RateLimiter(rate)
    sent = 0
    pending = 0
    futures: list[Any] = []
    for item in messages:
        if should_stop is not None and should_stop():
            break
        message = item if isinstance(item, OutgoingMessage) else OutgoingMessage(item)
        limiter.wait()
        futures.append(producer.send(message.topic or topic, value=message.value, key=message.key))
        sent += 1
        pending += 1
        if len(futures) >= 10_000:
            _raise_failures(producer, futures)
            futures.clear()
        if on_sent is not None and (rate or pending >= 200):
            on_sent(pending)
            pending = 0
    _raise_failures(producer, futures)
    if on_sent is not None and pending:
        on_sent(pending)
    return sent


def _raise_failures(producer: Any, futures: list[Any]) -> None:
    producer.flush()
    for future in futures:
        if future.failed():
            raise future.exception
