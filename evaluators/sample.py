"""The one input of every metric: an immutable, plain description of an answered question.

`evaluators` never sees Kafka messages or database rows; `collector` maps stored traces to
`Sample` values and the offline command maps dataset records with `Sample.from_record`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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

    @classmethod
    def from_record(
        cls, record: Mapping[str, Any], priority: Sequence[str] | None = None
    ) -> Sample:
        """Build a sample from an already validated trace record (SPEC §2 field names).

        Validation (types, required fields) is the caller's job; this only maps names.
        Ground truth follows `priority` (`evaluators.ground_truth`, default: relevance,
        relevant_ids, shown_url).
        """
        from evaluators.ground_truth import DEFAULT_PRIORITY, resolve

        contexts = tuple(
            Context(
                id=_opt_str(c.get("id")),
                url=_opt_str(c.get("url")),
                text=c.get("text"),
                score=c.get("score"),
            )
            for c in (record.get("contexts") or ())
        )
        shown = record.get("shown_url")
        shown_urls = (shown,) if isinstance(shown, str) else tuple(shown) if shown else None
        relevance, contexts, source = resolve(
            DEFAULT_PRIORITY if priority is None else priority,
            record.get("relevance"),
            record.get("relevant_ids"),
            shown_urls,
            contexts,
        )
        judge = record.get("judge")
        cache = record.get("cache") or {}
        ts = record.get("timestamp")
        if isinstance(ts, str):
            ts = datetime.fromisoformat(ts.replace("Z", "+00:00"))
        return cls(
            trace_id=str(record["trace_id"]),
            question=record["question"],
            answer=record.get("answer"),
            contexts=contexts,
            reference=record.get("reference"),
            relevance=relevance,
            session_id=record.get("session_id"),
            user_id=record.get("user_id"),
            turn=record.get("turn"),
            timestamp=ts,
            judge=JudgeDecision(
                decision=judge.get("decision"),
                score=judge.get("score"),
                model=judge.get("model"),
                latency_ms=judge.get("latency_ms"),
            )
            if judge
            else None,
            judge_label=record.get("judge_label"),
            cache_hit=cache.get("hit"),
            cache_similarity=cache.get("similarity"),
            tags=MappingProxyType({str(k): str(v) for k, v in (record.get("tags") or {}).items()}),
            shown_urls=shown_urls,
            ground_truth=source,
        )


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)
