"""Stored traces and validated records map to the same evaluator `Sample`."""

from __future__ import annotations

from datetime import UTC, datetime

from collector.ingest.decode.trace_json import parse_trace_record
from collector.store.models import Trace
from collector.store.samples import record_to_sample, trace_to_sample
from tests.collector.traces import make_trace


def test_row_and_record_give_the_same_sample() -> None:
    raw = make_trace(7, "ru") | {"relevance": {"doc-49": 2, "doc-50": 0}, "reference": "Эталон"}
    rec = parse_trace_record(raw)
    row = Trace(
        trace_id=rec.trace_id,
        timestamp=rec.timestamp,
        question=rec.question,
        answer=rec.answer,
        contexts=[c.to_json() for c in rec.contexts],
        reference=rec.reference,
        relevant_ids=list(rec.relevant_ids or ()),
        relevance=dict(rec.relevance or {}),
        session_id=rec.session_id,
        user_id=rec.user_id,
        turn=rec.turn,
        judge_decision=rec.judge.decision if rec.judge else None,
        judge_score=rec.judge.score if rec.judge else None,
        judge_model=rec.judge.model if rec.judge else None,
        judge_latency_ms=rec.judge.latency_ms if rec.judge else None,
        judge_label=rec.judge_label,
        cache_hit=rec.cache_hit,
        cache_similarity=rec.cache_similarity,
        tags=dict(rec.tags or {}),
    )
    from_row, from_record = trace_to_sample(row), record_to_sample(rec)
    assert from_row == from_record
    assert from_row.relevance == {"doc-49": 2, "doc-50": 0}  # graded wins over relevant_ids
    assert from_row.reference == "Эталон"
    assert from_row.contexts[0].key == "doc-49"


def test_sparse_row() -> None:
    row = Trace(
        trace_id="t",
        timestamp=datetime(2026, 1, 1, tzinfo=UTC),
        question="q",
        contexts=[{"url": "https://x"}, {"text": "t", "score": 1}],
        tags={"tenant": "acme", "shard": 3.0, "rate": 0.5},
    )
    sample = trace_to_sample(row)
    assert sample.judge is None and sample.relevance is None
    assert [c.key for c in sample.contexts] == ["https://x", None]
    assert sample.contexts[1].score == 1.0
    assert dict(sample.tags) == {"tenant": "acme", "shard": "3", "rate": "0.5"}
