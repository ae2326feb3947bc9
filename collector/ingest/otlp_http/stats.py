"""The receiver's counters, on the registry its process serves on `/metrics`."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

from collector.ingest.otlp_http.signals import SIGNALS


class ReceiverStats:
    """Requests per signal and HTTP status; spans and log records accepted (acknowledged by
    Kafka) or refused (parsed, but Kafka was unavailable); the wait for Kafka's ack."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "ragpulse_receiver_requests_total",
            "OTLP/HTTP export requests answered, per signal (traces, logs) and HTTP status.",
            ["signal", "code"],
            registry=registry,
        )
        self.spans = Counter(
            "ragpulse_receiver_spans_total",
            "Spans in /v1/traces requests: accepted (written to Kafka and acknowledged) or "
            "refused (the request was answered 503 or 413 after it parsed).",
            ["outcome"],
            registry=registry,
        )
        self.log_records = Counter(
            "ragpulse_receiver_log_records_total",
            "Log records in /v1/logs requests: accepted or refused, as for spans.",
            ["outcome"],
            registry=registry,
        )
        self.ack_seconds = Histogram(
            "ragpulse_receiver_kafka_ack_seconds",
            "Time from handing a request to the Kafka producer to the broker's acknowledgement.",
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
            registry=registry,
        )
        for signal in SIGNALS.values():
            self.requests.labels(signal.name, "200")
        for outcome in ("accepted", "refused"):
            self.spans.labels(outcome)
            self.log_records.labels(outcome)

    def items(self, signal: str, outcome: str, count: int) -> None:
        if count:
            counter = self.spans if signal == "traces" else self.log_records
            counter.labels(outcome).inc(count)
