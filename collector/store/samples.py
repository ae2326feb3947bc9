"""Stored traces and validated records -> `evaluators.sample.Sample` (the metrics' only input).

Ground truth: the first of graded `relevance`, `relevant_ids` (grade 1) and `shown_url`
present, in the configured priority (`evaluators.ground_truth`), else none.
Tags become strings (integral numbers without a decimal point) so group labels are uniform.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from collector.store.models import Trace
from collector.store.records import TraceRecord
from evaluators.ground_truth import DEFAULT_PRIORITY, resolve
from evaluators.sample import Context, JudgeDecision, Sample


def trace_to_sample(row: Trace, priority: Sequence[str] = DEFAULT_PRIORITY) -> Sample:
    """A stored trace as a sample; ground truth by `priority` (`evaluators.ground_truth`)."""
    judge = None
    if any(
        v is not None
        for v in (row.judge_decision, row.judge_score, row.judge_model, row.judge_latency_ms)
    ):
        judge = JudgeDecision(
            decision=row.judge_decision,
            score=row.judge_score,
            model=row.judge_model,
            latency_ms=row.judge_latency_ms,
        )
    shown = getattr(row, "shown_url", None)
    shown_urls = tuple(str(u) for u in shown) if shown else None
    relevance, contexts, source = resolve(
        priority,
        row.relevance,
        row.relevant_ids,
        shown_urls,
        tuple(_context(c) for c in row.contexts or () if isinstance(c, dict)),
    )
    return Sample(
        trace_id=row.trace_id,
        question=row.question,
        answer=row.answer,
        contexts=contexts,
        reference=row.reference,
        relevance=relevance,
        session_id=row.session_id,
        user_id=row.user_id,
        turn=row.turn,
        timestamp=row.timestamp,
        judge=judge,
        judge_label=row.judge_label,
        cache_hit=row.cache_hit,
        cache_similarity=row.cache_similarity,
        tags=_tags(row.tags),
        shown_urls=shown_urls,
        ground_truth=source,
    )


def record_to_sample(rec: TraceRecord, priority: Sequence[str] = DEFAULT_PRIORITY) -> Sample:
    """A validated record (e.g. a dataset line) as a sample."""
    judge = rec.judge
    relevance, contexts, source = resolve(
        priority,
        rec.relevance,
        rec.relevant_ids,
        rec.shown_urls,
        tuple(Context(id=c.id, url=c.url, text=c.text, score=c.score) for c in rec.contexts),
    )
    return Sample(
        trace_id=rec.trace_id,
        question=rec.question,
        answer=rec.answer,
        contexts=contexts,
        reference=rec.reference,
        relevance=relevance,
        session_id=rec.session_id,
        user_id=rec.user_id,
        turn=rec.turn,
        timestamp=rec.timestamp,
        judge=JudgeDecision(
            decision=judge.decision,
            score=judge.score,
            model=judge.model,
            latency_ms=judge.latency_ms,
        )
        if judge is not None
        else None,
        judge_label=rec.judge_label,
        cache_hit=rec.cache_hit,
        cache_similarity=rec.cache_similarity,
        tags=_tags(rec.tags),
        shown_urls=rec.shown_urls,
        ground_truth=source,
    )


def _context(c: Mapping[str, Any]) -> Context:
    score = c.get("score")
    return Context(
        id=_opt_str(c.get("id")),
        url=_opt_str(c.get("url")),
        text=c.get("text") if isinstance(c.get("text"), str) else None,
        score=float(score)
        if isinstance(score, int | float) and not isinstance(score, bool)
        else None,
    )


def _tags(tags: Mapping[str, Any] | None) -> Mapping[str, str]:
    if not tags:
        return MappingProxyType({})
    return MappingProxyType({str(k): v if isinstance(v, str) else _num(v) for k, v in tags.items()})


def _num(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)
