"""The evaluation events' tallies and their Prometheus counters.

`EventCounts` is shared by the observer (events held, dropped because the bound was
reached), the exporter wrapper `CountingExporter` (each exported batch: sent, or dropped as
`export_failed`) and `EventCounters`, the custom collector that exposes
`ragpulse_evaluation_events_sent_total` and `ragpulse_evaluation_events_dropped_total{reason}`
on the registry it is registered with.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence

from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from prometheus_client.core import CounterMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)

QUEUE_FULL = "queue_full"
EXPORT_FAILED = "export_failed"
SHUTDOWN = "shutdown"
DROP_REASONS = (QUEUE_FULL, EXPORT_FAILED, SHUTDOWN)


class EventCounts:
    """Thread-safe tallies: events sent, dropped by reason, and held (queued or exporting)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sent = 0
        self.dropped = dict.fromkeys(DROP_REASONS, 0)
        self.held = 0

    def finish(self, n: int, reason: str | None) -> None:
        with self.lock:
            self.held -= n
            if reason is None:
                self.sent += n
            else:
                self.dropped[reason] += n


class CountingExporter(LogRecordExporter):
    """Wraps the OTLP log exporter to count each batch as sent or failed."""

    def __init__(self, inner: LogRecordExporter, counts: EventCounts) -> None:
        self.inner = inner
        self.counts = counts

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        try:
            result = self.inner.export(batch)
        except Exception:
            logger.exception("exporting %d evaluation events failed", len(batch))
            result = LogRecordExportResult.FAILURE
        ok = result == LogRecordExportResult.SUCCESS
        self.counts.finish(len(batch), None if ok else EXPORT_FAILED)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()  # type: ignore[no-untyped-call]

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return bool(self.inner.force_flush(timeout_millis))


class EventCounters(Collector):
    """`ragpulse_evaluation_events_sent_total` and `..._dropped_total{reason}`."""

    def __init__(self, counts: EventCounts) -> None:
        self.counts = counts

    def collect(self) -> Iterator[Metric]:
        with self.counts.lock:
            sent = self.counts.sent
            dropped = dict(self.counts.dropped)
        family = CounterMetricFamily(
            "ragpulse_evaluation_events_sent",
            "gen_ai.evaluation.result events the OTLP endpoint accepted.",
        )
        family.add_metric([], float(sent))
        yield family
        lost = CounterMetricFamily(
            "ragpulse_evaluation_events_dropped",
            "gen_ai.evaluation.result events dropped: queue_full (the bound was reached, "
            "e.g. the endpoint is slow or down), export_failed, shutdown.",
            labels=["reason"],
        )
        for reason, count in sorted(dropped.items()):
            lost.add_metric([reason], float(count))
        yield lost
