"""Stored traces and validated records -> `evaluators.sample.Sample` (the metrics' only input).

`FIELD_COLUMNS` is the one table of which `traces` columns each `Sample` field is mapped
from: the jobs select by it (`collector.jobs.traces.trace_rows`), `trace_to_sample` reads exactly
those columns, and `record_to_sample` maps a record as the trace it is stored as.

Ground truth: the first of graded `relevance`, `relevant_ids` (grade 1) and `shown_url`
present, in the configured priority (`evaluators.ground_truth`), else none.
Tags become strings (integral numbers without a decimal point) so group labels are uniform.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType, SimpleNamespace
from typing import Any, Final, cast

from collector.store.models import Trace
from collector.store.records import TraceRecord
from collector.store.repository import TRACES, trace_row
from evaluators.ground_truth import DEFAULT_PRIORITY, resolve
from evaluators.sample import Context, JudgeDecision, Sample

_GROUND_TRUTH = ("relevance", "relevant_ids", "shown_url")

FIELD_COLUMNS: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        "trace_id": ("trace_id",),
        "question": ("question",),
        "answer": ("answer",),
        # keyed by url when shown_url is the ground truth: a metric comparing context keys
        # with the ground truth reads `relevance`, which brings those columns
        "contexts": ("contexts",),
        "reference": ("reference",),
        "relevance": _GROUND_TRUTH,
        "session_id": ("session_id",),
        "user_id": ("user_id",),
        "turn": ("turn",),
        "timestamp": ("timestamp",),
        "judge": ("judge_decision", "judge_score", "judge_model", "judge_latency_ms"),
        "judge_label": ("judge_label",),
        "cache_hit": ("cache_hit",),
        "cache_similarity": ("cache_similarity",),
        "tags": ("tags",),
        "shown_urls": ("shown_url",),
        "ground_truth": _GROUND_TRUTH,
        "latency_ms": ("latency_ms",),
    }
)
"""`Sample` field -> the `traces` columns it is mapped from."""

COLUMNS: Final[tuple[str, ...]] = tuple(
    c.key for c in TRACES.columns if any(c.key in cols for cols in FIELD_COLUMNS.values())
)
"""Every column `trace_to_sample` reads, in the table's order."""


def trace_to_sample(row: Trace, priority: Sequence[str] = DEFAULT_PRIORITY) -> Sample:
    """A stored trace (a `Trace` or a row of its `COLUMNS`) as a sample; ground truth by
    `priority` (`evaluators.ground_truth`)."""
    judge = None
    if not (
        row.judge_decision is None
        and row.judge_score is None
        and row.judge_model is None
        and row.judge_latency_ms is None
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
        tuple([_context(c) for c in row.contexts or () if isinstance(c, dict)]),
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
        latency_ms=row.latency_ms,
    )


def record_to_sample(rec: TraceRecord, priority: Sequence[str] = DEFAULT_PRIORITY) -> Sample:
    """A validated record (e.g. a dataset line) as a sample: the sample of the trace it is
    stored as (`repository.trace_row`, read under the column names like a fetched row)."""
    row = SimpleNamespace(**trace_row(rec, rec.timestamp))
    return trace_to_sample(cast(Trace, row), priority)


def _context(c: Mapping[str, Any]) -> Context:
    """One retrieved context of a stored trace (a backlog maps ~10 per trace: the common
    types, str ids and float scores, are tested first)."""
    key, url, text, score = c.get("id"), c.get("url"), c.get("text"), c.get("score")
    return Context(
        key if key is None or type(key) is str else str(key),
        url if url is None or type(url) is str else str(url),
        text if isinstance(text, str) else None,
        score
        if type(score) is float
        else float(score)
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
