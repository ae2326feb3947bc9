"""Merging OTLP fragments into stored traces: read, union the span sets, recompute, write.

A stored OTLP trace keeps every span summary seen (`traces.spans`); its other span-derived
fields are recomputed from that set (`record_from_spans`), so the result is the same for
any arrival order and a fragment applied twice changes nothing. Rows are locked with
`SELECT ... FOR UPDATE` on PostgreSQL (SQLite has one writer anyway). Feedback fields are
never touched here. A JSON trace with the same id is left alone (the fragment counts as a
duplicate).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.orm import Session

from collector.ingest.decode.completeness import Completeness, completeness, has_root
from collector.ingest.decode.otlp import OtlpFragment
from collector.ingest.decode.otlp_mapping import record_from_spans
from collector.ingest.decode.requests import SURELY_NOT, settled
from collector.store.bulk import insert_ignore_returning, is_postgresql
from collector.store.feedback_store import TraceState
from collector.store.models import utcnow
from collector.store.repository import TRACES, stored_candidates, trace_conflict, trace_row

# the columns recomputed from spans (all others belong to feedback or are fixed)
_SPAN_COLUMNS = (
    "timestamp",
    "question",
    "answer",
    "contexts",
    "session_id",
    "user_id",
    "model",
    "usage",
    "latency_ms",
    "latency_stages",
    "tags",
    "metadata",
    "shown_url",
    "spans",
    "not_request",
)


@dataclass
class MergeResult:
    """Traces created (`new_ids`) or changed by the fragments, and how many changed nothing.

    `known`: per incoming trace id, the span ids it had stored before this merge (empty
    for a new trace), or None when a JSON trace owns the id (every span is then ignored);
    `count_messages` uses it to tell which messages brought something new.
    `not_request`: per reason, the traces these fragments settled as no user request (their
    root stored, no request stage: `requests.settled`), each counted once, when it settles.
    `arrived`: the traces whose root span this merge brought (each trace once, whatever
    the order of its fragments: the moment it is counted on /metrics, see `completeness`).
    """

    states: list[TraceState] = field(default_factory=list)
    new_ids: list[str] = field(default_factory=list)
    changed: int = 0
    duplicates: int = 0
    known: dict[str, frozenset[str] | None] = field(default_factory=dict)
    not_request: Counter[str] = field(default_factory=Counter)
    arrived: list[Completeness] = field(default_factory=list)


def merge_span_sets(
    old: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]]
) -> dict[str, Mapping[str, Any]]:
    """The union of two span sets; a span id seen with two contents keeps a fixed choice."""
    merged = dict(old)
    for span_id, summary in new.items():
        current = merged.get(span_id)
        if current is None or _canonical(summary) > _canonical(current):
            merged[span_id] = summary
    return merged


def _canonical(summary: Mapping[str, Any]) -> str:
    return json.dumps(summary, sort_keys=True, ensure_ascii=False)


def merge_fragments(session: Session, fragments: Sequence[OtlpFragment]) -> MergeResult:
    """Apply all fragments of a batch (one read and at most one write per table)."""
    incoming: dict[str, dict[str, Mapping[str, Any]]] = {}
    for frag in fragments:
        incoming[frag.trace_id] = merge_span_sets(incoming.get(frag.trace_id, {}), frag.spans)
    result = MergeResult()
    _merge(session, incoming, result, retry=True)
    return result


def count_messages(
    messages: Sequence[Sequence[OtlpFragment]], known: Mapping[str, frozenset[str] | None]
) -> tuple[int, int]:
    """(stored, duplicates) counted per OTLP message, in order: a message is stored when it
    brought a span id its trace did not have yet (stored, or from an earlier message of the
    batch), else it is a duplicate; so each consumed message lands in exactly one count."""
    news = brought_new(messages, known)
    return sum(news), len(news) - sum(news)


def brought_new(
    messages: Sequence[Sequence[OtlpFragment]], known: Mapping[str, frozenset[str] | None]
) -> list[bool]:
    """Per message, in order: whether it brought a span id (or a log record's summary key)
    its trace had neither stored nor from an earlier message of `messages`."""
    seen: dict[str, set[str]] = {}
    out = []
    for fragments in messages:
        new = False
        for frag in fragments:
            before = known.get(frag.trace_id, frozenset())
            if before is None:
                continue
            spans = seen.setdefault(frag.trace_id, set(before))
            if not spans.issuperset(frag.spans):
                spans.update(frag.spans)
                new = True
        out.append(new)
    return out


def _merge(
    session: Session,
    incoming: dict[str, dict[str, Mapping[str, Any]]],
    result: MergeResult,
    *,
    retry: bool,
) -> None:
    t = TRACES
    stored = stored_candidates(session, incoming)
    query = select(t.c.trace_id, t.c.source, t.c.spans, t.c.relevant_ids, t.c.relevance).where(
        t.c.trace_id.in_(stored)
    )
    if is_postgresql(session):
        query = query.with_for_update()
    existing = {row.trace_id: row for row in session.execute(query)} if stored else {}
    now = utcnow()
    inserts: list[dict[str, Any]] = []
    updates: list[dict[str, Any]] = []
    states: dict[str, TraceState] = {}
    settling: dict[str, str] = {}
    arrivals: dict[str, Completeness] = {}
    for trace_id, spans in sorted(incoming.items()):
        row = existing.get(trace_id)
        if row is not None and row.source != "otlp":
            result.duplicates += 1
            result.known[trace_id] = None
            continue
        before = row.spans if row is not None and row.spans else {}
        result.known[trace_id] = frozenset(before)
        merged = merge_span_sets(before, spans)
        if merged == before:
            result.duplicates += 1
            continue
        record = record_from_spans(trace_id, merged)
        reason = settled(merged)
        if reason is not None and settled(before) is None:
            settling[trace_id] = reason
        if (
            # embedding work or building an agent is surely no request: counted apart,
            # never "incomplete"; a trace with no model call may be a request whose
            # content capture is off
            record.not_request not in SURELY_NOT
            and not has_root(before.values())
            and has_root(merged.values())
        ):
            arrivals[trace_id] = completeness(record, merged.values())
        values = trace_row(record, now, spans=dict(sorted(merged.items())))
        has_truth = row is not None and (row.relevant_ids is not None or row.relevance is not None)
        states[trace_id] = TraceState(
            trace_id=trace_id,
            has_ground_truth=has_truth,
            has_answer=record.answer is not None,
            tags=dict(record.tags) if record.tags else None,
            has_shown_url=record.shown_urls is not None,
            is_request=record.not_request is None,
        )
        if row is None:
            inserts.append(values)
        else:
            updates.append(
                {"b_trace_id": trace_id, "b_updated_at": now}
                | {f"b_{c}": values[c] for c in _SPAN_COLUMNS}
            )
    if updates:
        session.execute(
            update(t)
            .where(t.c.trace_id == bindparam("b_trace_id"))
            .values(
                updated_at=bindparam("b_updated_at"),
                **{c: bindparam(f"b_{c}") for c in _SPAN_COLUMNS},
            ),
            updates,
        )
    inserted: set[str] = set()
    if inserts:
        conflict = trace_conflict(session)
        inserted = {
            r[0] for r in insert_ignore_returning(session, t, inserts, conflict, ["trace_id"])
        }
    lost = {r["trace_id"] for r in inserts} - inserted
    for trace_id, state in states.items():
        if trace_id in lost:
            continue
        result.states.append(state)
        result.changed += 1
        if trace_id in settling:
            result.not_request[settling[trace_id]] += 1
        if trace_id in arrivals:
            result.arrived.append(arrivals[trace_id])
        if trace_id in inserted:
            result.new_ids.append(trace_id)
    if lost:
        # another writer created these rows since our read: merge into them instead
        again = {tid: incoming[tid] for tid in sorted(lost)}
        if retry:
            _merge(session, again, result, retry=False)
        else:
            result.duplicates += len(again)
