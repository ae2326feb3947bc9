"""Writing a request to Kafka and waiting for the acknowledgement before answering.

The producer writes with `acks=all`: every in-sync replica has the message when the
request is answered 200. It is made on the first need, not at import or construction, so
the receiver starts and answers 503 while Kafka is away; a failed connection is retried on
a later request, not before `retry_s`, and by one request at a time (the others get 503 at
once rather than queueing behind it). A write that is not acknowledged within
`ack_timeout_s` (connecting, fetching the topic's metadata and the acknowledgement
together) is answered 503: the client retries, and a message that reaches Kafka after all
is stored once anyway (the consumer merges spans by id). For the same reason the producer
is not idempotent: duplicates cost nothing, while an idempotent producer whose id the
broker forgot stays in a fatal state. Any failure but a timeout replaces the producer.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from collector.errors import one_line
from collector.ingest.kafka.producer import make_producer
from collector.ingest.otlp_http.errors import KafkaUnavailableError, TooLargeError
from collector.settings import KafkaSettings

logger = logging.getLogger(__name__)

ProducerFactory = Callable[..., Any]


class KafkaForwarder:
    """Sends one message per request and waits for Kafka's acknowledgement (thread-safe)."""

    def __init__(
        self,
        kafka: KafkaSettings,
        *,
        ack_timeout_s: float,
        retry_s: float = 1.0,
        producer_factory: ProducerFactory = make_producer,
    ) -> None:
        self._kafka = kafka
        self._ack_timeout_s = ack_timeout_s
        self._retry_s = retry_s
        self._factory = producer_factory
        self._producer: Any = None
        self._connecting = threading.Lock()
        self._retry_at = 0.0
        self._failure: str | None = "not connected yet"
        """Why the last connection or write failed; None after a success."""

    def connect(self) -> bool:
        """Make the producer now (at start-up); whether Kafka could be reached."""
        try:
            self._ensure_producer(time.monotonic() + self._ack_timeout_s)
        except KafkaUnavailableError as exc:
            logger.warning("Kafka is not reachable yet (%s): answering 503 until it is", exc)
            return False
        return True

    def send(self, topic: str, key: bytes | None, value: bytes) -> None:
        """Write `value` to `topic` and wait for the acknowledgement, else raise
        `KafkaUnavailableError` (or `TooLargeError` when Kafka refuses the size)."""
        from kafka.errors import KafkaError, KafkaTimeoutError, MessageSizeTooLargeError

        deadline = time.monotonic() + self._ack_timeout_s
        producer = self._ensure_producer(deadline)
        try:
            future = producer.send(topic, value=value, key=key)
            future.get(timeout=max(0.001, deadline - time.monotonic()))
        except MessageSizeTooLargeError as exc:
            raise TooLargeError(f"Kafka refused the message as too large: {exc}") from None
        except KafkaError as exc:
            self._failure = f"write to {topic} failed: {one_line(exc)}"
            if not isinstance(exc, KafkaTimeoutError):
                self._discard(producer)  # it may be in a state it does not leave
            raise KafkaUnavailableError(
                f"Kafka did not acknowledge the write to {topic}: {one_line(exc)}"
            ) from None
        self._failure = None

    def _ensure_producer(self, deadline: float) -> Any:
        producer = self._producer
        if producer is not None:
            return producer
        if not self._connecting.acquire(blocking=False):
            raise KafkaUnavailableError("connecting to Kafka")
        try:
            if self._producer is not None:
                return self._producer
            if time.monotonic() < self._retry_at:
                raise KafkaUnavailableError(f"Kafka is not reachable: {self._failure}")
            self._producer = self._make(max(1, int((deadline - time.monotonic()) * 1000)))
            self._failure = None
            return self._producer
        finally:
            self._connecting.release()

    def _make(self, timeout_ms: int) -> Any:
        from kafka.errors import KafkaError

        ack_ms = max(1, int(self._ack_timeout_s * 1000))
        linger_ms = 5
        try:
            return self._factory(
                self._kafka,
                acks="all",
                enable_idempotence=False,
                linger_ms=linger_ms,
                bootstrap_timeout_ms=timeout_ms,
                max_block_ms=ack_ms,
                request_timeout_ms=ack_ms,
                delivery_timeout_ms=ack_ms + linger_ms,
            )
        except KafkaError as exc:
            self._retry_at = time.monotonic() + self._retry_s
            self._failure = one_line(exc)
            raise KafkaUnavailableError(f"Kafka is not reachable: {one_line(exc)}") from None

    def _discard(self, producer: Any) -> None:
        with self._connecting:
            if self._producer is not producer:
                return  # another request replaced it already
            self._producer = None
            self._retry_at = time.monotonic() + self._retry_s
        try:
            producer.close(timeout=0)
        except Exception:
            logger.debug("closing a failed producer failed", exc_info=True)

    def readiness(self) -> str:
        """`ok`, or why the last connection or write failed while no bootstrap server
        accepts a TCP connection now (for `/readyz`: a probe must see Kafka come back
        without waiting for a write, which a receiver out of rotation would never get)."""
        failure = self._failure
        if failure is None or self._reachable():
            return "ok"
        return failure

    def _reachable(self, timeout_s: float = 0.5) -> bool:
        for server in self._kafka.bootstrap_servers:
            host, _, port = server.rpartition(":")
            try:
                with socket.create_connection((host.strip("[]"), int(port)), timeout_s):
                    return True
            except (OSError, ValueError):
                continue
        return False

    def close(self, timeout_s: float = 5.0) -> None:
        """Flush what is in flight and close the producer."""
        producer, self._producer = self._producer, None
        if producer is not None:
            try:
                producer.close(timeout=timeout_s)
            except Exception:
                logger.exception("closing the Kafka producer failed")
