"""Operational counters of the consumer, as Prometheus metrics on a registry passed in.

The `/metrics` exporter exposes whatever registry the service hands it; tests build a fresh
`CollectorRegistry`. Nothing is registered on prometheus_client's global default registry.
`totals` keeps the same numbers as a plain `BatchResult` for the `ingest` JSON summary.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from collector.ingest import BatchResult


class ConsumerStats:
    """Counters: consumed per topic, stored, duplicates, invalid per reason, sampled per purpose,
    consumer errors per kind, and the lag gauge per topic and partition."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.totals = BatchResult()
        self.consumed = Counter(
            "ragpulse_traces_consumed_total",
            "Kafka messages consumed (and committed after storing), per topic.",
            ["topic"],
            registry=self.registry,
        )
        self.stored = Counter(
            "ragpulse_traces_stored_total",
            "Traces newly stored (a replayed or repeated trace is not counted again).",
            registry=self.registry,
        )
        self.duplicates = Counter(
            "ragpulse_traces_duplicates_total",
            "Trace messages whose trace_id was already stored.",
            registry=self.registry,
        )
        self.invalid = Counter(
            "ragpulse_traces_invalid_total",
            "Messages written to dead_letters, per reason.",
            ["reason"],
            registry=self.registry,
        )
        self.sampled = Counter(
            "ragpulse_traces_sampled_total",
            "Traces selected by the deterministic sampler, per purpose.",
            ["purpose"],
            registry=self.registry,
        )
        self.field_warnings = Counter(
            "ragpulse_traces_field_warnings_total",
            "Optional trace fields of an unexpected shape, per top-level field: the trace is "
            "stored, the raw value kept under metadata._invalid.",
            ["field"],
            registry=self.registry,
        )
        self.errors = Counter(
            "ragpulse_consumer_errors_total",
            "Batches that failed and were retried (database_unavailable, ingest_error), "
            "and offset commits that failed (commit_failed).",
            ["kind"],
            registry=self.registry,
        )
        self.lag = Gauge(
            "ragpulse_consumer_lag",
            "Messages in the partition not yet consumed by this group (high watermark - position).",
            ["topic", "partition"],
            registry=self.registry,
        )

    def record(self, result: BatchResult) -> None:
        """Count one committed batch."""
        self.totals.add(result)
        for topic, count in result.consumed_by_topic.items():
            self.consumed.labels(topic=topic).inc(count)
        if result.stored:
            self.stored.inc(result.stored)
        if result.duplicates:
            self.duplicates.inc(result.duplicates)
        for reason, count in result.invalid_by_reason.items():
            self.invalid.labels(reason=reason).inc(count)
        for purpose, count in result.sampled_by_purpose.items():
            self.sampled.labels(purpose=purpose).inc(count)
        for name, count in result.field_warnings.items():
            self.field_warnings.labels(field=name).inc(count)

    def error(self, kind: str) -> None:
        self.errors.labels(kind=kind).inc()

    def set_lag(self, topic: str, partition: int, lag: int) -> None:
        self.lag.labels(topic=topic, partition=str(partition)).set(max(lag, 0))

    def summary(self) -> dict[str, int]:
        """The `ragpulse ingest` summary: consumed, stored, duplicates, invalid, sampled."""
        return {
            "consumed": self.totals.consumed,
            "stored": self.totals.stored,
            "duplicates": self.totals.duplicates,
            "invalid": self.totals.invalid,
            "sampled": self.totals.sampled,
        }
