"""From a batch of raw Kafka messages to rows in the database, in the caller's transaction.

`Ingestor.ingest_batch` decodes every message (JSON traces, feedback, OTLP), writes a dead
letter for each bad one, inserts traces and feedback idempotently with one multi-row
statement per table, folds feedback onto traces, and records deterministic samples. It
never commits: the consumer commits the transaction, then the Kafka offsets, so delivery is
at-least-once and a replayed batch changes nothing. Database errors propagate.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from collector.ingest.decode.completeness import tally
from collector.ingest.decode.errors import DecodeError
from collector.ingest.decode.otlp import OtlpFragment, decode_otlp_message
from collector.ingest.decode.otlp_logs import decode_otlp_logs
from collector.ingest.decode.trace_json import decode_json_message, parse_message
from collector.ingest.otlp_store import (
    MergeResult,
    brought_new,
    count_messages,
    merge_fragments,
)
from collector.ingest.sampling import Sampler
from collector.settings import Settings
from collector.store.evaluation_store import (
    EvaluationEvent,
    insert_evaluation_events,
    refresh_evaluations,
    traces_with_evaluation_events,
)
from collector.store.feedback_store import (
    TraceState,
    apply_feedback,
    insert_feedback,
    store_labels,
    traces_with_pending_feedback,
)
from collector.store.records import FeedbackEvent, TraceRecord
from collector.store.repository import (
    DeadLetterRow,
    insert_dead_letters,
    insert_samples,
    insert_traces,
)
from evaluators.ground_truth import RELEVANCE, RELEVANT_IDS, SHOWN_URL, source_of

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RawMessage:
    """One Kafka record as consumed (value None = a tombstone or an empty record)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int | None = None


@dataclass
class BatchResult:
    """Counts for one batch (or, after `add`, for many).

    consumed: messages seen; stored: trace messages that stored something new (a new JSON
    trace, an OTLP message bringing spans its trace did not have, a logs message bringing
    a new evaluation event or GenAI details record); duplicates: trace
    messages and feedback events that brought nothing new (replays, repeats);
    invalid: messages sent to dead letters; sampled: new (trace, purpose) sample rows;
    feedback: feedback events newly stored. So consumed = stored + duplicates + feedback +
    invalid.
    unstored: of `invalid`, the messages that decoded but the database refused (poison,
    see `collector.ingest.kafka.isolation`); lost: of those, the ones not even dead-lettered.
    """

    consumed: int = 0
    stored: int = 0
    duplicates: int = 0
    invalid: int = 0
    sampled: int = 0
    feedback: int = 0
    unstored: int = 0
    lost: int = 0
    invalid_by_reason: dict[str, int] = field(default_factory=dict)
    sampled_by_purpose: dict[str, int] = field(default_factory=dict)
    consumed_by_topic: dict[str, int] = field(default_factory=dict)
    field_warnings: dict[str, int] = field(default_factory=dict)
    """Per top-level field: optional values of stored traces kept raw under
    metadata._invalid instead of costing the trace."""
    not_request: dict[str, int] = field(default_factory=dict)
    """Per reason: OTLP traces that settled as no user request in this batch (index
    building, batch embedding, health checks: `collector.ingest.decode.requests`)."""
    otlp_traces: dict[str, int] = field(default_factory=dict)
    """OTLP traces whose root span arrived, per convention (`decode.completeness`)."""
    otlp_incomplete: dict[tuple[str, str], int] = field(default_factory=dict)
    """Of those, per (convention, missing field: question, answer, contexts)."""

    def add(self, other: BatchResult) -> None:
        self.consumed += other.consumed
        self.stored += other.stored
        self.duplicates += other.duplicates
        self.invalid += other.invalid
        self.sampled += other.sampled
        self.feedback += other.feedback
        self.unstored += other.unstored
        self.lost += other.lost
        for mine, theirs in (
            (self.invalid_by_reason, other.invalid_by_reason),
            (self.sampled_by_purpose, other.sampled_by_purpose),
            (self.consumed_by_topic, other.consumed_by_topic),
            (self.field_warnings, other.field_warnings),
            (self.not_request, other.not_request),
            (self.otlp_traces, other.otlp_traces),
        ):
            for key, count in theirs.items():
                mine[key] = mine.get(key, 0) + count
        for pair, count in other.otlp_incomplete.items():
            self.otlp_incomplete[pair] = self.otlp_incomplete.get(pair, 0) + count


@dataclass
class _Decoded:
    traces: list[TraceRecord] = field(default_factory=list)
    fragments: list[OtlpFragment] = field(default_factory=list)
    otlp_messages: list[list[OtlpFragment]] = field(default_factory=list)
    feedback: list[FeedbackEvent] = field(default_factory=list)
    evaluation_messages: list[list[EvaluationEvent]] = field(default_factory=list)
    log_fragments: list[list[OtlpFragment]] = field(default_factory=list)
    """Per logs message (parallel to `evaluation_messages`): its GenAI details fragments."""
    dead: list[DeadLetterRow] = field(default_factory=list)
    fragment_warnings: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True)
class DecodedBatch:
    """A decoded batch ready for `Ingestor.store`."""

    decoded: _Decoded
    counts: BatchResult


class Ingestor:
    """Decodes and stores batches; holds only configuration (no connections, no I/O)."""

    def __init__(self, settings: Settings) -> None:
        kafka = settings.kafka
        self._max_bytes = kafka.max_message_bytes
        self._max_depth = settings.decode.max_depth
        self._ground_truth = tuple(settings.ground_truth.priority)
        self._feedback_topic = kafka.feedback_topic
        self._otlp_topic = kafka.otlp_topic
        self._otlp_encoding = kafka.otlp_encoding
        self._otlp_logs_topic = kafka.otlp_logs_topic
        self._sampler = Sampler(settings.sampling)

    def ingest_batch(self, session: Session, messages: Sequence[RawMessage]) -> BatchResult:
        """Store one batch inside `session` without committing; return what happened."""
        return self.store(session, self.decode(messages))

    def decode(self, messages: Sequence[RawMessage]) -> DecodedBatch:
        """Decode and validate a batch (pure CPU, no I/O); bad messages become dead letters.

        Separate from `store` so the consumer can decode batch N+1 while batch N is being
        written on another thread.
        """
        result = BatchResult()
        return DecodedBatch(self._decode(messages, result), result)

    def store(self, session: Session, batch: DecodedBatch) -> BatchResult:
        """Write a decoded batch inside `session` without committing; return what happened."""
        decoded = batch.decoded
        result = BatchResult(
            consumed=batch.counts.consumed, consumed_by_topic=dict(batch.counts.consumed_by_topic)
        )

        insert_dead_letters(session, decoded.dead)
        invalid = Counter(d.reason for d in decoded.dead)
        result.invalid = len(decoded.dead)
        result.invalid_by_reason = dict(invalid)

        new_traces = insert_traces(session, decoded.traces)
        result.stored += len(new_traces)
        result.duplicates += len(decoded.traces) - len(new_traces)
        warned = Counter(f for rec in new_traces for f in rec.field_warnings)
        warned.update(decoded.fragment_warnings)
        result.field_warnings = dict(warned)

        decisions: dict[str, list[str]] = {}
        for rec in new_traces:
            decisions[rec.trace_id] = self._sampler.purposes_for(
                rec.trace_id,
                has_ground_truth=source_of(
                    self._ground_truth, rec.relevance, rec.relevant_ids, rec.shown_urls
                )
                is not None,
                has_answer=rec.answer is not None,
                tags=rec.tags,
            )

        merged = merge_fragments(session, decoded.fragments) if decoded.fragments else None
        new_ids = [r.trace_id for r in new_traces]
        # OTLP is counted per message, so consumed = stored + duplicates + feedback + invalid
        stored, duplicates = count_messages(
            decoded.otlp_messages, merged.known if merged is not None else {}
        )
        result.stored += stored
        result.duplicates += duplicates
        if merged is not None:
            result.not_request = dict(merged.not_request)
            new_ids.extend(merged.new_ids)
            result.otlp_traces, result.otlp_incomplete = tally(merged.arrived)
            for state in merged.states:
                decisions[state.trace_id] = self._purposes(state)

        new_feedback = insert_feedback(session, decoded.feedback)
        result.feedback = len(new_feedback)
        result.duplicates += len(decoded.feedback) - len(new_feedback)
        store_labels(session, [*new_traces, *new_feedback])
        warned.update(f for ev in new_feedback for f in ev.field_warnings)
        result.field_warnings = dict(warned)

        touched = set(traces_with_pending_feedback(session, new_ids))
        touched.update(ev.trace_id for ev in new_feedback)
        for state in apply_feedback(session, touched):
            decisions[state.trace_id] = self._purposes(state)

        self._store_evaluations(session, decoded, merged, new_ids, result)

        recorded = insert_samples(
            session, ((tid, purpose) for tid, ps in decisions.items() for purpose in ps)
        )
        result.sampled = len(recorded)
        result.sampled_by_purpose = dict(Counter(p for _, p in recorded))
        return result

    def _store_evaluations(
        self,
        session: Session,
        decoded: _Decoded,
        merged: MergeResult | None,
        new_ids: Sequence[str],
        result: BatchResult,
    ) -> None:
        """Keep the logs' evaluation events (counted per message like OTLP spans: stored
        when it brought an event not seen before or GenAI details its trace lacked, else a
        duplicate) and recompute the evaluations of every trace they, or spans carrying
        evaluations, touched."""
        messages = decoded.evaluation_messages
        inserted = insert_evaluation_events(session, [e for m in messages for e in m])
        details = brought_new(decoded.log_fragments, merged.known if merged else {})
        changed: Sequence[TraceState] = merged.states if merged else []
        seen: set[str] = set()
        for events, new_details in zip(messages, details, strict=True):
            hashes = {e.event_hash for e in events}
            if (hashes & inserted.keys()) - seen or new_details:
                result.stored += 1
            else:
                result.duplicates += 1
            seen |= hashes
        touched = set(inserted.values())
        with_evals = {
            f.trace_id for f in decoded.fragments if any("evals" in s for s in f.spans.values())
        }
        touched |= with_evals & {state.trace_id for state in changed}
        touched |= set(traces_with_evaluation_events(session, new_ids))
        refresh_evaluations(session, touched)

    def _has_truth(self, explicit: bool, has_shown_url: bool) -> bool:
        """Ground truth under the configured priority (relevance/relevant_ids/shown_url)."""
        explicit_used = RELEVANCE in self._ground_truth or RELEVANT_IDS in self._ground_truth
        return (explicit and explicit_used) or (has_shown_url and SHOWN_URL in self._ground_truth)

    def _purposes(self, state: TraceState) -> list[str]:
        if not state.is_request:
            return []  # index building, batch embedding, ...: nothing to evaluate
        return self._sampler.purposes_for(
            state.trace_id,
            has_ground_truth=self._has_truth(state.has_ground_truth, state.has_shown_url),
            has_answer=state.has_answer,
            tags=state.tags,
        )

    def _decode(self, messages: Sequence[RawMessage], result: BatchResult) -> _Decoded:
        out = _Decoded()
        by_topic: Counter[str] = Counter()
        for msg in messages:
            by_topic[msg.topic] += 1
            try:
                if msg.topic == self._otlp_logs_topic:
                    logs = decode_otlp_logs(
                        msg.value, self._otlp_encoding, self._max_bytes, self._max_depth
                    )
                    out.evaluation_messages.append(logs.events)
                    out.log_fragments.append(logs.fragments)
                    out.fragments.extend(logs.fragments)
                    out.fragment_warnings.update(w for fr in logs.fragments for w in fr.warnings)
                    continue
                if msg.topic == self._otlp_topic:
                    fragments = decode_otlp_message(
                        msg.value, self._otlp_encoding, self._max_bytes, self._max_depth
                    )
                    out.fragments.extend(fragments)
                    out.otlp_messages.append(fragments)
                    out.fragment_warnings.update(w for fr in fragments for w in fr.warnings)
                    continue
                item = parse_message(
                    decode_json_message(msg.value, self._max_bytes, self._max_depth),
                    feedback_topic=msg.topic == self._feedback_topic,
                )
            except DecodeError as exc:
                out.dead.append(
                    DeadLetterRow(
                        topic=msg.topic,
                        partition=msg.partition,
                        offset=msg.offset,
                        key=msg.key,
                        raw=msg.value if msg.value is not None else b"",
                        reason=exc.reason,
                        detail=exc.detail,
                    )
                )
                continue
            if isinstance(item, FeedbackEvent):
                out.feedback.append(item)
            else:
                out.traces.append(item)
        result.consumed = len(messages)
        result.consumed_by_topic = dict(by_topic)
        return out
