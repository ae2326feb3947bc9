"""Every evaluated trace's results as OpenTelemetry `gen_ai.evaluation.result` events.

`EvaluationEvents` is an `OutcomeObserver` (`collector.jobs.recording.observers`): the jobs hand it
each run's committed per-trace outcomes, it counts them into a bounded in-memory queue and
returns (no I/O, no lock held for long: the job thread pays microseconds per trace). Its
own worker thread takes the queued traces in batches, looks up what the outcomes lack in
one query per table (the root span id of OTLP traces, the judge's reasons in `judgments`;
`exporters.evaluation_lookup`), builds one log record per metric
(`exporters.evaluation_records`) and emits it through an OpenTelemetry SDK
`LoggerProvider` with a `BatchLogRecordProcessor` and the OTLP log exporter
(`exporters.otlp_exporter`: protocol, endpoint, headers, timeout and compression from the
standard `OTEL_EXPORTER_OTLP_*` variables).

Bounded: at most `queue_size` events are held at once (queued here or in the SDK's queue
or export); beyond that new events are dropped and counted, never waited for. So an
endpoint that is down costs the jobs nothing: exports fail (counted, reason
`export_failed`), the queue fills, further events are dropped (`queue_full`).
Counters on the registry passed in: `ragpulse_evaluation_events_sent_total` and
`ragpulse_evaluation_events_dropped_total{reason}`. `shutdown()` flushes what is held.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

from opentelemetry._logs import SeverityNumber
from opentelemetry.context import Context
from opentelemetry.sdk._logs.export import LogRecordExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context
from prometheus_client import CollectorRegistry
from sqlalchemy.orm import Session, sessionmaker

from collector.ingest.decode.evaluations import EVENT_NAME
from collector.jobs.recording.observers import Evaluated
from collector.settings import EvaluationEventsSettings, Settings
from exporters.evaluation_counts import (
    EXPORT_FAILED,
    QUEUE_FULL,
    SHUTDOWN,
    CountingExporter,
    EventCounters,
    EventCounts,
)
from exporters.evaluation_lookup import Lookup, lookup
from exporters.evaluation_records import (
    EventRecord,
    emitted_count,
    event_record,
    explanation_text,
    score_label,
)

logger = logging.getLogger(__name__)

SCOPE = "ragpulse.evaluation"
EXTERNAL_JOB = "external"
WORKER_BATCH = 256
"""Traces the worker takes per round (one lookup query per table for all of them)."""


class EvaluationEvents:
    """The observer, its queue and worker, the SDK logger; see the module docstring."""

    def __init__(
        self,
        settings: EvaluationEventsSettings,
        session_factory: sessionmaker[Session] | None,
        exporter: LogRecordExporter,
        *,
        service_name: str = "ragpulse",
        directions: dict[str, str] | None = None,
    ) -> None:
        """`exporter`: an SDK `LogRecordExporter` (`exporters.otlp_exporter.log_exporter`).
        `directions`: metric -> `higher`/`lower`, for pass/fail labels (looked up in the
        evaluators' registry when not given)."""
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
        from opentelemetry.sdk.resources import Resource

        self.settings = settings
        self.session_factory = session_factory
        self.counts = EventCounts()
        self._directions = directions
        self._jobs = frozenset(settings.jobs)
        self._queue: deque[tuple[float, Evaluated]] = deque()
        self._wake = threading.Event()
        self._stopping = False
        self._flushing = False
        self._last_observed = 0.0
        self._processor = BatchLogRecordProcessor(
            CountingExporter(exporter, self.counts),
            schedule_delay_millis=settings.schedule_delay_ms,
            max_export_batch_size=settings.batch_size,
            max_queue_size=settings.queue_size,
        )
        # service.name from the settings unless OTEL_SERVICE_NAME/OTEL_RESOURCE_ATTRIBUTES say
        resource = Resource.create()
        if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
            resource = resource.merge(Resource({"service.name": service_name}))
        self._provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
        self._provider.add_log_record_processor(self._processor)
        self._logger = self._provider.get_logger(SCOPE)
        self._worker = threading.Thread(
            target=self._run, name="ragpulse-evaluation-events", daemon=True
        )
        self._worker.start()

    # -- the observer (job thread) ------------------------------------------------------

    def observe(self, evaluated: Sequence[Evaluated]) -> None:
        """Queue the traces' events, or drop and count those beyond the bound."""
        now = time.time()
        limit = self.settings.queue_size
        counts = self.counts
        taken: list[tuple[float, Evaluated]] = []
        dropped = 0
        with counts.lock:
            for item in evaluated:
                if not self._wanted(item.job):
                    continue
                n = emitted_count(item.outcomes)
                if n == 0:
                    continue
                if self._stopping or counts.held + n > limit:
                    dropped += n
                    continue
                counts.held += n
                taken.append((now, item))
            counts.dropped[SHUTDOWN if self._stopping else QUEUE_FULL] += dropped
        if taken:
            self._last_observed = time.monotonic()
            self._queue.extend(taken)
            self._wake.set()

    def _wanted(self, job: str) -> bool:
        if self._jobs:
            return job in self._jobs
        return job != EXTERNAL_JOB

    # -- the worker ---------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            self._wake.wait(1.0)
            self._wake.clear()
            try:
                self._settle()
                while self._queue:
                    take = min(WORKER_BATCH, len(self._queue))
                    self._emit([self._queue.popleft() for _ in range(take)])
            except Exception:  # the worker must not die: log, and go on with the next
                logger.exception("the evaluation events worker failed; going on")
            if self._stopping and not self._queue:
                return

    def _settle(self) -> None:
        """Wait until `settle_ms` passed since the last hand-over (not when stopping or
        flushing): the job that handed the events over goes on aggregating, and this
        worker's CPU would lengthen that run (one interpreter lock)."""
        settle = self.settings.settle_ms / 1000.0
        while not self._stopping and not self._flushing:
            left = self._last_observed + settle - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, 0.05))

    def _emit(self, batch: list[tuple[float, Evaluated]]) -> None:
        found = self._lookup([e for _, e in batch])
        for observed, item in batch:
            try:
                records = self._records(item, found)
            except Exception:
                logger.exception("building the evaluation events of %s failed", item.trace_id)
                self.counts.finish(emitted_count(item.outcomes), EXPORT_FAILED)
                continue
            context = _trace_context(records[0]) if records else None
            for record in records:
                try:
                    self._send(record, observed, context)
                except Exception:
                    logger.exception("emitting an evaluation event failed; going on")
                    self.counts.finish(1, EXPORT_FAILED)

    def _records(self, item: Evaluated, found: Lookup) -> list[EventRecord]:
        out = []
        for metric, outcome in item.outcomes.items():
            parsed = found.judged.get((item.trace_id, metric))
            record = event_record(
                job=item.job,
                trace_id=item.trace_id,
                metric=metric,
                outcome=outcome,
                span_id=found.spans.get(item.trace_id, 0),
                explanation=explanation_text(parsed, self.settings.explanation_max_chars),
                label=self._label(metric, outcome),
            )
            if record is not None:
                out.append(record)
        return out

    def _lookup(self, items: list[Evaluated]) -> Lookup:
        if self.session_factory is None:
            return Lookup()
        try:
            with self.session_factory() as session:
                return lookup(
                    session,
                    items,
                    explanations=self.settings.explanation_max_chars > 0,
                )
        except Exception:
            logger.exception("looking up span ids and explanations failed; events go without")
            return Lookup()

    def _label(self, metric: str, outcome: Any) -> str | None:
        thresholds = self.settings.pass_thresholds
        if metric not in thresholds or not hasattr(outcome, "value"):
            return None
        return score_label(metric, float(outcome.value), thresholds, self._direction(metric))

    def _direction(self, metric: str) -> str | None:
        if self._directions is not None:
            return self._directions.get(metric)
        try:
            from evaluators.registry import describe

            return describe(metric).direction
        except Exception:
            return None

    def _send(self, record: EventRecord, observed: float, context: Context | None) -> None:
        self._logger.emit(
            timestamp=int(observed * 1e9),
            context=context,
            severity_number=SeverityNumber(record.severity_number),
            severity_text=record.severity_text,
            attributes=record.attributes,
            event_name=EVENT_NAME,
        )

    # -- life cycle ---------------------------------------------------------------------

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Wait until every queued event was handed to the SDK, then export them all."""
        deadline = time.monotonic() + timeout_s
        self._flushing = True
        try:
            self._wake.set()
            while self._queue and time.monotonic() < deadline:
                time.sleep(0.005)
            return bool(self._provider.force_flush(int(timeout_s * 1000)))
        finally:
            self._flushing = False

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Stop taking events, hand the queued ones to the SDK and flush them."""
        self._stopping = True
        self._wake.set()
        self._worker.join(timeout_s)
        self._provider.shutdown()
        with self.counts.lock:
            stranded = self.counts.held
        if stranded > 0:
            self.counts.finish(stranded, SHUTDOWN)

    # -- counters -----------------------------------------------------------------------

    def register(self, registry: CollectorRegistry) -> EvaluationEvents:
        registry.register(EventCounters(self.counts))
        return self


def _trace_context(record: EventRecord) -> Context | None:
    """The (remote, sampled) span context the events of one trace attach to; None without
    a W3C trace id. Made once per trace: every event of the trace shares it."""
    if not record.trace_id:
        return None
    span = SpanContext(record.trace_id, record.span_id, is_remote=True, trace_flags=TraceFlags(1))
    return set_span_in_context(NonRecordingSpan(span))


def make_evaluation_events(
    settings: Settings,
    session_factory: sessionmaker[Session] | None,
    registry: CollectorRegistry | None = None,
) -> EvaluationEvents | None:
    """The events observer when `evaluation_events.enabled`, else None (nothing created,
    nothing connected). Its counters go on `registry` when one is given."""
    if not settings.evaluation_events.enabled:
        return None
    from exporters.otlp_exporter import log_exporter

    events = EvaluationEvents(
        settings.evaluation_events,
        session_factory,
        log_exporter(),
        service_name=settings.otel.service_name,
    )
    if registry is not None:
        events.register(registry)
    return events
