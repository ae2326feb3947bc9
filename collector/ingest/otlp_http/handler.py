"""One OTLP/HTTP export request, from its headers and body stream to the answer.

The answer to a request is 200 only after Kafka acknowledged the message holding it; a
request without items (an empty export) is answered 200 without a write. Refusals carry
their reason in a `google.rpc.Status` (`responses`), a 503 also `Retry-After`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import BinaryIO

from collector.ingest.otlp_http.body import Encoding, answer_encoding, encoding_of, read_body
from collector.ingest.otlp_http.errors import RequestRefused
from collector.ingest.otlp_http.forward import KafkaForwarder
from collector.ingest.otlp_http.responses import status, success
from collector.ingest.otlp_http.signals import LOGS, TRACES, Checked, Signal
from collector.ingest.otlp_http.stats import ReceiverStats
from collector.settings import Settings

logger = logging.getLogger(__name__)

_WARN_EVERY_S = 10.0


@dataclass(frozen=True)
class Reply:
    status: int
    content_type: str
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()


class OtlpHandler:
    """Reads, checks and forwards export requests; `topics` maps a signal name to its topic."""

    def __init__(
        self,
        topics: Mapping[str, str],
        forwarder: KafkaForwarder,
        stats: ReceiverStats,
        *,
        max_body_bytes: int,
        retry_after_s: int,
    ) -> None:
        self.topics = dict(topics)
        self.forwarder = forwarder
        self.stats = stats
        self.max_body_bytes = max_body_bytes
        self.retry_after_s = retry_after_s
        self._warned_at = -_WARN_EVERY_S

    @classmethod
    def from_settings(
        cls, settings: Settings, forwarder: KafkaForwarder, stats: ReceiverStats
    ) -> OtlpHandler:
        receiver = settings.receiver
        return cls(
            {TRACES.name: settings.kafka.otlp_topic, LOGS.name: settings.kafka.otlp_logs_topic},
            forwarder,
            stats,
            max_body_bytes=receiver.max_body_bytes or settings.kafka.max_message_bytes,
            retry_after_s=receiver.retry_after_s,
        )

    def handle(
        self,
        signal: Signal,
        *,
        content_type: str,
        content_encoding: str,
        content_length: str | None,
        stream: BinaryIO,
    ) -> Reply:
        encoding = answer_encoding(content_type)
        checked: Checked | None = None
        try:
            # the body first, even of an unsupported type: read (bounded) or drained, the
            # client then sees the answer instead of a reset connection
            body = read_body(stream, content_length, content_encoding, self.max_body_bytes)
            encoding = encoding_of(content_type)
            checked = signal.check(body, encoding)
            if checked.items:
                started = time.perf_counter()
                self.forwarder.send(self.topics[signal.name], checked.key, body)
                self.stats.ack_seconds.observe(time.perf_counter() - started)
        except RequestRefused as exc:
            return self._refused(signal, exc, encoding, checked)
        self.stats.requests.labels(signal.name, "200").inc()
        self.stats.items(signal.name, "accepted", checked.items)
        content, answer = success(signal, encoding)
        return Reply(200, content, answer)

    def _refused(
        self, signal: Signal, exc: RequestRefused, encoding: Encoding, checked: Checked | None
    ) -> Reply:
        reason = str(exc)
        self.stats.requests.labels(signal.name, str(exc.status)).inc()
        if checked is not None:
            self.stats.items(signal.name, "refused", checked.items)
        headers: tuple[tuple[str, str], ...] = ()
        if exc.retriable:
            headers = (("Retry-After", str(self.retry_after_s)),)
            now = time.monotonic()
            if now - self._warned_at >= _WARN_EVERY_S:
                self._warned_at = now
                logger.warning("%s refused with %d: %s", signal.path, exc.status, reason)
        else:
            logger.debug("%s refused with %d: %s", signal.path, exc.status, reason)
        content, body = status(exc.status, reason, encoding)
        return Reply(exc.status, content, body, headers)
