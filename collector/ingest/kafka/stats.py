"""Operational counters of the consumer, as Prometheus metrics on a registry passed in.

The `/metrics` exporter exposes whatever registry the service hands it; tests build a fresh
`CollectorRegistry`. Nothing is registered on prometheus_client's global default registry.
`totals` keeps the same numbers as a plain `BatchResult` for the `ingest` JSON summary.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge

from collector.ingest.pipeline import BatchResult


@dataclass(frozen=True)
class ConsumerHealth:
    """Whether the consumer keeps failing the same batch: how often, since when (monotonic
    seconds, None when the last batch went through), where it starts (topic, partition)
    -> offset, and the last error."""

    failures: int = 0
    since: float | None = None
    position: dict[tuple[str, int], int] = field(default_factory=dict)
    error: str = ""

    def stuck_seconds(self, now: float | None = None) -> float:
        if self.since is None:
            return 0.0
        return max(0.0, (time.monotonic() if now is None else now) - self.since)

    def where(self) -> str:
        return ",".join(f"{t}/{p}@{o}" for (t, p), o in sorted(self.position.items()))


class ConsumerStats:
    """Counters: consumed per topic, stored, duplicates, invalid per reason, sampled per purpose,
    OTLP traces per convention and those missing fields, consumer errors per kind, and the
    lag gauge per topic and partition."""

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
            "Trace messages that stored something new: a new JSON trace, or an OTLP message "
            "with spans its trace did not have (replays and repeats are duplicates).",
            registry=self.registry,
        )
        self.duplicates = Counter(
            "ragpulse_traces_duplicates_total",
            "Trace messages and feedback events that brought nothing new (replays, repeats).",
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
        self.not_request = Counter(
            "ragpulse_traces_not_request_total",
            "OTLP traces stored as no user request (index building, batch embedding, an "
            "agent being built, health checks), per reason (embedding, agent_setup, "
            "no_model_call, unknown_spans): never sampled nor evaluated. Counted once, when "
            "the trace's root span is stored.",
            ["reason"],
            registry=self.registry,
        )
        self.otlp_traces = Counter(
            "ragpulse_otlp_traces_total",
            "OTLP traces counted when their root span is stored (once per trace), per "
            "convention the spans were read with (a trace counts under each of its own).",
            ["convention"],
            registry=self.registry,
        )
        self.otlp_incomplete = Counter(
            "ragpulse_otlp_traces_incomplete_total",
            "Of those, traces missing the question, the answer or the contexts (no document "
            "text), per convention and missing field.",
            ["convention", "missing"],
            registry=self.registry,
        )
        self.errors = Counter(
            "ragpulse_consumer_errors_total",
            "Batches that failed and were retried (database_unavailable, ingest_error), "
            "offset commits that failed (commit_failed), and records that could be neither "
            "stored nor dead-lettered and were skipped (record_lost).",
            ["kind"],
            registry=self.registry,
        )
        self.lag = Gauge(
            "ragpulse_consumer_lag",
            "Messages in the partition not yet consumed by this group (high watermark - position).",
            ["topic", "partition"],
            registry=self.registry,
        )
        self._health = ConsumerHealth()
        self._health_lock = threading.Lock()
        self.stuck_seconds = Gauge(
            "ragpulse_consumer_stuck_seconds",
            "Seconds the consumer has been failing the same batch (0 once a batch goes through).",
            registry=self.registry,
        )
        self.stuck_seconds.set_function(lambda: self.health().stuck_seconds())
        self.batch_failures = Gauge(
            "ragpulse_consumer_batch_failures",
            "Failed attempts at the batch the consumer is stuck on (0 when not stuck).",
            registry=self.registry,
        )
        self.stuck_offset = Gauge(
            "ragpulse_consumer_stuck_offset",
            "First offset of the batch the consumer keeps failing, per partition of that "
            "batch (no series when not stuck).",
            ["topic", "partition"],
            registry=self.registry,
        )

    def failed(self, position: dict[tuple[str, int], int], error: str) -> ConsumerHealth:
        """Count one more failure of the batch starting at `position`; return the state."""
        with self._health_lock:
            old = self._health
            self._health = ConsumerHealth(
                failures=old.failures + 1,
                since=old.since if old.since is not None else time.monotonic(),
                position=dict(position) if old.since is None else old.position,
                error=error,
            )
            health = self._health
        self.batch_failures.set(health.failures)
        if health.failures == 1:
            self.stuck_offset.clear()
            for (topic, partition), offset in health.position.items():
                self.stuck_offset.labels(topic=topic, partition=str(partition)).set(offset)
        return health

    def succeeded(self) -> None:
        """A batch went through: not stuck any more."""
        with self._health_lock:
            if self._health.since is None:
                return
            self._health = ConsumerHealth()
        self.batch_failures.set(0)
        self.stuck_offset.clear()

    def health(self) -> ConsumerHealth:
        with self._health_lock:
            return self._health

    def record(self, result: BatchResult) -> None:
        """Count one committed batch."""
        self.totals.add(result)
        for topic, count in result.consumed_by_topic.items():
            self.consumed.labels(topic=topic).inc(count)
        if result.stored:
            self.stored.inc(result.stored)
        if result.duplicates:
            self.duplicates.inc(result.duplicates)
        if result.lost:
            self.errors.labels(kind="record_lost").inc(result.lost)
        for reason, count in result.invalid_by_reason.items():
            self.invalid.labels(reason=reason).inc(count)
        for purpose, count in result.sampled_by_purpose.items():
            self.sampled.labels(purpose=purpose).inc(count)
        for name, count in result.field_warnings.items():
            self.field_warnings.labels(field=name).inc(count)
        for reason, count in result.not_request.items():
            self.not_request.labels(reason=reason).inc(count)
        for convention, count in result.otlp_traces.items():
            self.otlp_traces.labels(convention=convention).inc(count)
        for (convention, missing), count in result.otlp_incomplete.items():
            self.otlp_incomplete.labels(convention=convention, missing=missing).inc(count)

    def error(self, kind: str) -> None:
        self.errors.labels(kind=kind).inc()

    def set_lag(self, topic: str, partition: int, lag: int) -> None:
        self.lag.labels(topic=topic, partition=str(partition)).set(max(lag, 0))

    def summary(self) -> dict[str, int]:
        """The `ragpulse ingest` summary: consumed = stored + duplicates + feedback + invalid,
        then sampled, and unstored (of invalid: decoded, but refused by the database)."""
        return {
            "consumed": self.totals.consumed,
            "stored": self.totals.stored,
            "duplicates": self.totals.duplicates,
            "feedback": self.totals.feedback,
            "invalid": self.totals.invalid,
            "sampled": self.totals.sampled,
            "unstored": self.totals.unstored,
        }
