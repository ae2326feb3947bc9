"""The one input of every metric: an immutable, plain description of an answered question.

`evaluators` never sees Kafka messages or database rows: `collector.store.samples` maps
stored traces and validated dataset records to `Sample` values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any

_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Context:
    """One retrieved chunk, in rank order within its sample."""

    id: str | None = None
    url: str | None = None
    text: str | None = None
    score: float | None = None

    @property
    def key(self) -> str | None:
        """The document key used by retrieval metrics: the id, else the url."""
        return self.id if self.id is not None else self.url


@dataclass(frozen=True, slots=True)
class JudgeDecision:
    """The production judge's decision about showing the answer."""

    decision: bool | None = None
    score: float | None = None
    model: str | None = None
    latency_ms: float | None = None


@dataclass(frozen=True, slots=True)
class Sample:
    """A question with everything known about how it was answered.

    `relevance` is graded ground truth (document key -> grade, 0 = judged not relevant);
    binary `relevant_ids` from a trace become grade 1. `None` means no ground truth.
    """

    trace_id: str
    question: str
    answer: str | None = None
    contexts: tuple[Context, ...] = ()
    reference: str | None = None
    relevance: Mapping[str, int] | None = None
    session_id: str | None = None
    user_id: str | None = None
    turn: int | None = None
    timestamp: datetime | None = None
    judge: JudgeDecision | None = None
    judge_label: bool | None = None
    cache_hit: bool | None = None
    cache_similarity: float | None = None
    tags: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    shown_urls: tuple[str, ...] | None = None
    """The document(s) shown to the user in the real dialog (trace field `shown_url`)."""
    ground_truth: str | None = None
    """Where `relevance` came from: relevance, relevant_ids or shown_url
    (`evaluators.ground_truth`); None when there is none."""
    latency_ms: float | None = None
    """The answer's end-to-end latency (trace field `latency_ms`; the stages' sum)."""
