"""Validated, immutable records produced by the decoders and consumed by the store.

A `TraceRecord` is one answered question (SPEC §2); a `FeedbackEvent` is ground truth or a
rating that arrives later for a trace. Mapping fields (`usage`, `tags`, `metadata`,
`relevance`) hold freshly built dicts owned by the record; treat them as read-only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class ContextRecord:
    """One retrieved chunk, in rank order."""

    id: str | None = None
    url: str | None = None
    text: str | None = None
    score: float | None = None

    def to_json(self) -> dict[str, Any]:
        """The stored form: only the fields that are set."""
        out: dict[str, Any] = {}
        if self.id is not None:
            out["id"] = self.id
        if self.url is not None:
            out["url"] = self.url
        if self.text is not None:
            out["text"] = self.text
        if self.score is not None:
            out["score"] = self.score
        return out


@dataclass(frozen=True, slots=True)
class JudgeRecord:
    """The production judge's decision on showing the answer."""

    decision: bool | None = None
    score: float | None = None
    model: str | None = None
    latency_ms: float | None = None


@dataclass(frozen=True, slots=True)
class TraceRecord:
    """One validated trace (SPEC §2), ready to be stored or evaluated."""

    trace_id: str
    timestamp: datetime
    question: str
    answer: str | None = None
    contexts: tuple[ContextRecord, ...] = ()
    session_id: str | None = None
    user_id: str | None = None
    turn: int | None = None
    reference: str | None = None
    relevant_ids: tuple[str, ...] | None = None
    relevance: Mapping[str, int] | None = None
    judge: JudgeRecord | None = None
    judge_label: bool | None = None
    cache_hit: bool | None = None
    cache_similarity: float | None = None
    model: str | None = None
    usage: Mapping[str, Any] | None = None
    latency_ms: float | None = None
    tags: Mapping[str, str | int | float] | None = None
    metadata: Mapping[str, Any] | None = None
    source: str = "json"
    shown_urls: tuple[str, ...] | None = None
    """`shown_url`: the document(s) shown to the user (seed 004 §7.3)."""
    latency_stages: Mapping[str, float] | None = None
    """Per-stage latencies when `latency_ms` was an object (`latency_ms` is then the total)."""
    field_warnings: tuple[str, ...] = ()
    """Top-level optional fields whose values did not fit (kept under metadata._invalid)."""
    labels: Mapping[str, float] | None = None
    """Human labels: judge metric -> value on its label scale (`evaluators.labels`)."""
    labeler: str | None = None
    """Who gave `labels` (optional)."""
    not_request: str | None = None
    """Why an OTLP trace is no user request (index building, batch embedding, ...:
    `collector.ingest.decode.requests`); None for a request. Such traces are stored but
    never sampled nor evaluated."""

    @property
    def has_ground_truth(self) -> bool:
        """Explicit ground truth (relevance or relevant_ids); `shown_url` is weighed by the
        configured ground-truth priority (`evaluators.ground_truth`)."""
        return self.relevance is not None or self.relevant_ids is not None


@dataclass(frozen=True, slots=True)
class FeedbackEvent:
    """Later ground truth or a user rating for a trace; `event_hash` makes it idempotent.

    `event_hash` is the sha256 of the canonical JSON of the validated fields, so the same
    event sent twice (even with different key order or whitespace) is stored once.
    """

    trace_id: str
    timestamp: datetime
    event_hash: str
    judge_label: bool | None = None
    relevant_ids: tuple[str, ...] | None = None
    rating: float | None = None
    comment: str | None = None
    labels: Mapping[str, float] | None = None
    """Human labels: judge metric -> value on its label scale (`evaluators.labels`)."""
    labeler: str | None = None
    field_warnings: tuple[str, ...] = ()
    """`labels`/`labeler` values that did not fit: counted, left out, the event is kept."""
