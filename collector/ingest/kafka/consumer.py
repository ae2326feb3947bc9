"""The trace consumer: Kafka batches -> one database transaction each -> offsets committed.

Delivery is at-least-once with idempotent writes (SPEC §3). For every polled batch:

1. convert the records to `RawMessage`s and call `Ingestor.ingest_batch` in a new session
   (on a worker thread, while this thread polls the next batch);
2. commit the database transaction;
3. commit the batch's offsets (last offset + 1 per partition);
4. count it in `ConsumerStats`.

A crash between 2 and 3 replays the batch, which changes nothing. When the database is
unreachable the transaction is rolled back, no offset is committed, and the same batch is
retried with exponential backoff (capped) until it goes through. Any other failure is
logged with its traceback, counted and retried the same way, but only until the batch has
failed `kafka.isolate_after_failures` times: then it is fetched again and written in
halves (`collector.ingest.kafka.isolation`), so the records the database refuses go to
`dead_letters` and the rest is stored and committed. `health()` tells how long and where
the consumer has been failing the same batch (for `/readyz` and the stuck gauges).

While a batch waits, its partitions are paused and the consumer keeps polling, so the
group membership (bounded by `max_poll_interval_ms`) survives an outage of any length;
records a rebalance might still deliver meanwhile are sought back and fetched again later.
A stop request (SIGTERM/SIGINT) lets the current batch finish and commit, then closes the
consumer, which leaves the group at once (a restart rejoins without waiting for a timeout).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from collector.ingest.kafka.client import KafkaUnavailableError, make_kafka_consumer
from collector.ingest.kafka.idle import IdleClock
from collector.ingest.kafka.isolation import (
    DeadLetterWriter,
    describe,
    is_database_unavailable,
    store_bisecting,
)
from collector.ingest.kafka.records import first_offsets, next_offsets, to_raw_messages
from collector.ingest.kafka.stats import ConsumerHealth, ConsumerStats
from collector.ingest.pipeline import BatchResult, DecodedBatch, Ingestor, RawMessage
from collector.settings import KafkaSettings

logger = logging.getLogger(__name__)


LAG_REFRESH_S = 5.0


@dataclass(frozen=True)
class _InFlight:
    """A batch being stored on the worker thread: its future and, per partition, the first
    offset (to rewind to on failure) and the next one (to commit on success). The polled
    records themselves are not kept: their values are dropped once decoded."""

    future: Future[BatchResult]
    first: dict[Any, int]
    next: dict[Any, int]
    size: int


class TraceConsumer:
    """Runs the poll -> store -> commit loop until `stop` is set (or the topic goes idle)."""

    def __init__(
        self,
        kafka: KafkaSettings,
        session_factory: sessionmaker[Session],
        ingestor: Ingestor,
        stats: ConsumerStats,
        *,
        consumer_factory: Callable[[KafkaSettings], Any] = make_kafka_consumer,
    ) -> None:
        self.kafka = kafka
        self.session_factory = session_factory
        self.ingestor = ingestor
        self.stats = stats
        self._consumer_factory = consumer_factory
        self._retry_initial_s = kafka.retry_initial_s
        self._retry_max_s = kafka.retry_max_s
        self._consumer: Any = None
        self._delay_s = kafka.retry_initial_s
        self._isolate_after = kafka.isolate_after_failures
        self._record_failures = 0  # failures of the batch in hand that were not outages
        self._isolate = False  # fetch the failing batch again and write it in halves
        self._dead_letter = DeadLetterWriter(session_factory)
        self._last_lag_refresh = 0.0
        self.batches = 0

    def run(self, stop: threading.Event, idle_timeout_s: float | None = None) -> BatchResult:
        """Consume until `stop` is set, or, with `idle_timeout_s`, until no message arrived
        for that long while holding the same partitions (see `IdleClock`). Returns the
        totals of this run."""
        from kafka.errors import KafkaError

        totals = BatchResult()
        try:
            consumer = self._consumer = self._consumer_factory(self.kafka)
        except KafkaError as exc:
            servers = ",".join(self.kafka.bootstrap_servers)
            raise KafkaUnavailableError(f"cannot reach Kafka at {servers}: {exc}") from exc
        started = time.monotonic()
        idle = None
        if idle_timeout_s is not None:
            join_limit = idle_timeout_s + self.kafka.max_poll_interval_ms / 1000 + 10
            idle = IdleClock(idle_timeout_s, join_limit, started)
        warned_unassigned = False
        # One batch is stored on a worker thread while the next one is polled here, so
        # fetching overlaps the database write; the consumer is only touched on this
        # thread, and a batch's offsets are committed only after its transaction.
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragpulse-store")
        inflight: _InFlight | None = None
        try:
            while not stop.is_set():
                records = consumer.poll(
                    timeout_ms=self.kafka.poll_timeout_ms, max_records=self.kafka.max_poll_records
                )
                now = time.monotonic()
                isolating = self._isolate
                batch = None
                if records:  # raw values are kept for dead letters when isolating
                    batch = (to_raw_messages(records), None) if isolating else self._decode(records)
                if inflight is not None:
                    result = self._finish(consumer, inflight, records, stop)
                    inflight = None
                    if result is None:  # failed: this poll's records were rewound too
                        if idle is not None:
                            idle.activity(time.monotonic())
                        continue
                    totals.add(result)
                if records:
                    if idle is not None:
                        idle.activity(now)
                    messages, decoded = batch if batch is not None else ([], None)
                    # Raw values are needed again only if decoding failed; dropping them
                    # here keeps one batch's bytes in memory, not two.
                    if isolating:
                        future = pool.submit(self._store_isolating, messages)
                    else:
                        kept = messages if decoded is None else []
                        future = pool.submit(self._store, kept, decoded)
                    inflight = _InFlight(
                        future, first_offsets(records), next_offsets(records), len(messages)
                    )
                    del batch, messages, decoded, records
                    self._refresh_lag(consumer, force=False)
                    continue
                self._refresh_lag(consumer, force=False)
                assignment = consumer.assignment()
                if not assignment and not warned_unassigned and now - started > 30:
                    warned_unassigned = True
                    logger.warning(
                        "no partition assigned after %.0fs: do the topics %s exist?",
                        now - started,
                        ",".join(self.kafka.topics),
                    )
                reason = idle.stop_reason(assignment, now) if idle is not None else None
                if reason is not None:
                    logger.info("%s: stopping", reason)
                    break
            if inflight is not None:  # stopping: the batch in hand is finished and committed
                result = self._finish(consumer, inflight, {}, stop)
                if result is not None:
                    totals.add(result)
        finally:
            pool.shutdown(wait=True)
            self._refresh_lag(consumer, force=True)
            consumer.close(autocommit=False)
            self._consumer = None
        return totals

    def _finish(
        self,
        consumer: Any,
        inflight: _InFlight,
        polled: Mapping[Any, Sequence[Any]],
        stop: threading.Event,
    ) -> BatchResult | None:
        """Wait for the stored batch; commit its offsets and count it. On failure rewind
        to its start (and to the start of `polled`, fetched meanwhile), back off, None."""
        try:
            result = inflight.future.result()
        except Exception as exc:
            self._failed(exc, inflight)
            self._rewind_and_wait(consumer, [inflight.first, first_offsets(polled)], stop)
            return None
        self._delay_s = self._retry_initial_s
        self._record_failures = 0
        self._isolate = False
        self.stats.succeeded()
        self._commit_offsets(consumer, inflight.next)
        self.stats.record(result)
        self.batches += 1
        return result

    def health(self) -> ConsumerHealth:
        """How long and where the consumer has been failing the same batch."""
        return self.stats.health()

    def _failed(self, exc: Exception, inflight: _InFlight) -> None:
        size = inflight.size
        position = {(tp.topic, tp.partition): offset for tp, offset in inflight.first.items()}
        health = self.stats.failed(position, describe(exc, 300))
        if is_database_unavailable(exc):
            self.stats.error("database_unavailable")
            logger.warning(
                "database unavailable, retrying in %.1fs (batch of %d messages, "
                "offsets not committed): %s",
                self._delay_s,
                size,
                describe(exc, 300),
            )
            return
        self.stats.error("ingest_error")
        self._record_failures += 1
        if self._record_failures >= self._isolate_after:
            self._isolate = True
            logger.exception(
                "batch of %d messages at %s failed %d times: retrying in %.1fs record by "
                "record (in halves), refused records go to dead_letters",
                size,
                health.where(),
                self._record_failures,
                self._delay_s,
            )
        else:
            logger.exception(
                "batch of %d messages at %s failed (%d of %d before isolating its records), "
                "retrying in %.1fs",
                size,
                health.where(),
                self._record_failures,
                self._isolate_after,
                self._delay_s,
            )

    def _store_isolating(self, messages: Sequence[RawMessage]) -> BatchResult:
        """Store the messages in halves until the refused ones are found (dead letters)."""
        return store_bisecting(
            messages,
            lambda piece: self._store(piece, None),
            self._dead_letter,
            known_to_fail=True,  # the batch failed isolate_after_failures times as a whole
        )

    def _rewind_and_wait(
        self,
        consumer: Any,
        starts: Sequence[Mapping[Any, int]],
        stop: threading.Event,
    ) -> None:
        """Seek every partition of the failed batches back to its first record, then wait
        out the backoff with all partitions paused while polling, so the group membership
        (bounded by max_poll_interval_ms) survives; the next poll fetches the batch again.

        Seeking also drops records kafka-python buffered past the batch: resuming a paused
        partition with such a buffer left it stalled (kafka-python 3.0.12).
        """
        rewind: dict[Any, int] = {}
        for start in starts:
            for tp, offset in start.items():
                rewind[tp] = min(offset, rewind.get(tp, offset))
        for tp, offset in rewind.items():
            if tp in consumer.assignment():
                consumer.seek(tp, offset)
        consumer.pause(*consumer.assignment())
        try:
            deadline = time.monotonic() + self._delay_s
            while not stop.is_set():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                stray = consumer.poll(timeout_ms=int(min(remaining, 0.5) * 1000) + 1)
                for tp, offset in first_offsets(stray).items():  # newly assigned meanwhile
                    consumer.seek(tp, offset)
        finally:
            consumer.resume(*consumer.paused())
        self._delay_s = min(self._delay_s * 2, self._retry_max_s)
        if stop.is_set():
            logger.info("stop requested while a batch waits; its offsets stay uncommitted")

    def _decode(
        self, records: Mapping[Any, Sequence[Any]]
    ) -> tuple[list[RawMessage], DecodedBatch | None]:
        """Decode on the polling thread, overlapping the write of the batch before; an
        unexpected failure leaves decoding to `_store`, whose errors take the retry path."""
        messages = to_raw_messages(records)
        try:
            return messages, self.ingestor.decode(messages)
        except Exception:
            return messages, None

    def _store(self, messages: Sequence[RawMessage], decoded: DecodedBatch | None) -> BatchResult:
        session = self.session_factory()
        try:
            if decoded is None:
                result = self.ingestor.ingest_batch(session, messages)
            else:
                result = self.ingestor.store(session, decoded)
            session.commit()
            return result
        except BaseException:
            _rollback_quietly(session)
            raise
        finally:
            _close_quietly(session)

    def _commit_offsets(self, consumer: Any, next_offsets: Mapping[Any, int]) -> None:
        from kafka.errors import KafkaError
        from kafka.structs import OffsetAndMetadata

        offsets = {tp: OffsetAndMetadata(offset, "", -1) for tp, offset in next_offsets.items()}
        try:
            consumer.commit(offsets)
        except KafkaError as exc:
            # The rows are committed; whoever owns the partitions now replays the batch,
            # which changes nothing.
            self.stats.error("commit_failed")
            logger.warning("offset commit failed (batch will be replayed harmlessly): %s", exc)

    def _refresh_lag(self, consumer: Any, *, force: bool) -> None:
        """Lag = high watermark - position per assigned partition, at most every few seconds.

        The high watermark comes from fetch responses; `end_offsets` is only a fallback
        because the embedded broker answers it wrongly for multi-record batches.
        """
        now = time.monotonic()
        if not force and now - self._last_lag_refresh < LAG_REFRESH_S:
            return
        self._last_lag_refresh = now
        try:
            assigned = list(consumer.assignment())
            unknown = [tp for tp in assigned if consumer.highwater(tp) is None]
            fallback = consumer.end_offsets(unknown, timeout_ms=2000) if unknown else {}
            for tp in assigned:
                high = consumer.highwater(tp)
                if high is None:
                    high = fallback.get(tp)
                if high is None:
                    continue
                position = consumer.position(tp, timeout_ms=2000)
                if position is not None:
                    self.stats.set_lag(tp.topic, tp.partition, int(high) - int(position))
        except Exception as exc:  # lag is best effort; never stop consuming for it
            logger.debug("lag refresh failed: %s", exc)


def _rollback_quietly(session: Session) -> None:
    try:
        session.rollback()
    except Exception as exc:  # the connection is probably gone; the pool discards it
        logger.debug("rollback failed: %s", exc)


def _close_quietly(session: Session) -> None:
    try:
        session.close()
    except Exception as exc:
        logger.debug("session close failed: %s", exc)
