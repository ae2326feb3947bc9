"""The OTLP/HTTP receiver as a part of a process: `ragpulse receive` (and `run --role
receiver`) runs it alone, `ragpulse demo` beside the service.

`Receiver` is a service component (`start()`/`stop()`): its counters go on the registry
it is given, which its own endpoint serves on `/metrics`; `/readyz` says whether Kafka
can be reached. `stop()` stops accepting, lets the requests in flight finish (each within
`receiver.request_timeout_s`), then flushes and closes the producer.
"""

from __future__ import annotations

import logging

from prometheus_client import CollectorRegistry

from collector.ingest.otlp_http.forward import KafkaForwarder
from collector.ingest.otlp_http.handler import OtlpHandler
from collector.ingest.otlp_http.stats import ReceiverStats
from collector.settings import Settings
from exporters.http import MetricsServer, Readiness
from exporters.http.receiver import serve_receiver

logger = logging.getLogger(__name__)


class Receiver:
    def __init__(self, settings: Settings, registry: CollectorRegistry) -> None:
        self.settings = settings
        self.registry = registry
        self.forwarder = KafkaForwarder(
            settings.kafka,
            ack_timeout_s=settings.receiver.ack_timeout_s,
            retry_s=min(1.0, float(settings.receiver.retry_after_s)),
        )
        self.handler = OtlpHandler.from_settings(settings, self.forwarder, ReceiverStats(registry))
        self.server: MetricsServer | None = None

    @property
    def url(self) -> str:
        if self.server is None:
            raise RuntimeError("the receiver is not started")
        return self.server.url

    def readiness(self) -> Readiness:
        kafka = self.forwarder.readiness()
        return Readiness(kafka == "ok", {"kafka": kafka})

    def start(self) -> Receiver:
        # listening first: a port taken fails at once, not after the wait for Kafka; the
        # requests that come meanwhile are answered 503 (connecting)
        self.server = serve_receiver(
            self.handler, self.registry, self.settings.receiver, self.readiness
        )
        self.forwarder.connect()
        kafka = self.settings.kafka
        logger.info(
            "receiving OTLP/HTTP on %s: /v1/traces -> %s, /v1/logs -> %s",
            self.server.url,
            kafka.otlp_topic,
            kafka.otlp_logs_topic,
        )
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop(grace_s=self.settings.receiver.request_timeout_s)
        self.forwarder.close()
