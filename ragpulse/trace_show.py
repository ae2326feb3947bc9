"""`ragpulse traces show ID`: one stored trace, whole, for a person or as one JSON object.

The JSON form (`trace_json`) has every key always present (null when the trace has no
value), in a fixed order, so scripts can rely on it; the text form (`render_detail`) shows
the same fields, long texts of contexts cut to an excerpt.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from collector.store.models import HumanLabel
from collector.store.worst import TraceDetail, trace_detail

EXCERPT = 200
"""Characters of a context's text shown in the text form (`--json` has it whole)."""


@dataclass(frozen=True, slots=True)
class ShownTrace:
    """A stored trace, its jobs' outcomes and the human labels given to it."""

    detail: TraceDetail
    labels: tuple[tuple[str, str, float], ...]
    """(metric, labeler, value)."""


def load_trace(session: Session, trace_id: str) -> ShownTrace | None:
    """The stored trace `trace_id` with all it is known by, or None if not stored."""
    detail = trace_detail(session, trace_id)
    if detail is None:
        return None
    rows = session.execute(
        select(HumanLabel.metric, HumanLabel.labeler, HumanLabel.value)
        .where(HumanLabel.trace_id == trace_id)
        .order_by(HumanLabel.metric, HumanLabel.labeler)
    ).all()
    return ShownTrace(detail, tuple((m, lab, float(v)) for m, lab, v in rows))


def cut(text: str, limit: int) -> str:
    """`text` on one line, at most `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _contexts(contexts: Sequence[Any] | None) -> list[dict[str, Any]]:
    out = []
    for rank, item in enumerate(contexts or (), 1):
        got = item if isinstance(item, Mapping) else {}
        out.append(
            {
                "rank": rank,
                "id": got.get("id"),
                "url": got.get("url"),
                "score": got.get("score"),
                "text": got.get("text"),
            }
        )
    return out


def trace_json(shown: ShownTrace) -> dict[str, Any]:
    """The whole stored trace as one JSON object with stable keys."""
    detail = shown.detail
    t = detail.trace
    return {
        "trace_id": t.trace_id,
        "timestamp": _iso(t.timestamp),
        "received_at": _iso(t.received_at),
        "updated_at": _iso(t.updated_at),
        "source": t.source,
        "not_request": t.not_request,
        "question": t.question,
        "answer": t.answer,
        "contexts": _contexts(t.contexts),
        "model": t.model,
        "session_id": t.session_id,
        "turn": t.turn,
        "user_id": t.user_id,
        "usage": t.usage,
        "latency_ms": t.latency_ms,
        "latency_stages": t.latency_stages,
        "cache": {"hit": t.cache_hit, "similarity": t.cache_similarity},
        "tags": t.tags,
        "metadata": t.meta,
        "judge": {
            "decision": t.judge_decision,
            "score": t.judge_score,
            "model": t.judge_model,
            "latency_ms": t.judge_latency_ms,
        },
        "ground_truth": {
            "reference": t.reference,
            "relevant_ids": t.relevant_ids,
            "relevance": t.relevance,
            "shown_url": t.shown_url,
            "judge_label": t.judge_label,
        },
        "feedback": {"rating": t.feedback_rating, "comment": t.feedback_comment},
        "labels": [
            {"metric": metric, "labeler": labeler or None, "value": value}
            for metric, labeler, value in shown.labels
        ],
        "evaluations": t.evaluations,
        "spans": t.spans,
        "slices": dict(detail.slices) or None,
        "scores": [{"job": j, "metric": m, "outcome": o} for j, m, o in detail.scores],
        "reasons": dict(detail.reasons),
    }


def _pairs(values: Mapping[str, Any] | None) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted((values or {}).items())) or "-"


def _text(label: str, text: str | None) -> list[str]:
    """`label: text`, the text whole, its later lines indented under the first."""
    if not text:
        return [f"  {label} -"]
    first, *rest = text.strip("\n").splitlines() or [""]
    pad = " " * (len(label) + 3)
    return [f"  {label} {first}", *(f"{pad}{line}" for line in rest)]


def _number(value: float | None, unit: str = "") -> str:
    return "-" if value is None else f"{value:g}{unit}"


def render_detail(shown: ShownTrace) -> list[str]:
    """The text form: the trace's fields, then its scores and what the judge said."""
    detail = shown.detail
    t = detail.trace
    received = f", received {t.received_at:%Y-%m-%d %H:%M:%S}" if t.received_at else ""
    lines = [f"trace {t.trace_id}  {t.timestamp:%Y-%m-%d %H:%M:%S} UTC  ({t.source}{received})"]
    if t.not_request:
        lines.append(f"  not a request: {t.not_request} (stored, never sampled nor evaluated)")
    lines += _text("question:", t.question)
    lines += _text("answer:  ", t.answer)
    contexts = _contexts(t.contexts)
    lines.append(f"  contexts ({len(contexts)}):" if contexts else "  contexts: none")
    for c in contexts:
        described = " ".join(f"{k}={c[k]}" for k in ("id", "score", "url") if c[k] is not None)
        lines.append(f"    [{c['rank']}] {described or '(no id, score or url)'}")
        lines.append(f"        {cut(c['text'], EXCERPT) if c['text'] else '(no text)'}")
    turn = f" (turn {t.turn})" if t.turn is not None else ""
    lines.append(
        f"  model: {t.model or '-'}   session: {t.session_id or '-'}{turn}   "
        f"user: {t.user_id or '-'}"
    )
    lines.append(f"  usage: {_pairs(t.usage)}")
    stages = ", ".join(
        f"{k} {_number(v, ' ms')}" for k, v in sorted((t.latency_stages or {}).items())
    )
    lines.append(
        f"  latency: {_number(t.latency_ms, ' ms')}" + (f" (stages: {stages})" if stages else "")
    )
    if t.cache_hit is not None or t.cache_similarity is not None:
        hit = {True: "hit", False: "miss", None: "-"}[t.cache_hit]
        lines.append(f"  cache: {hit} (similarity {_number(t.cache_similarity)})")
    lines.append(f"  tags: {_pairs(t.tags)}")
    if t.meta:
        lines.append(f"  metadata: {cut(json.dumps(t.meta, ensure_ascii=False), 300)}")
    lines.extend(_judge_lines(t))
    lines.extend(_truth_lines(shown))
    rating = t.feedback_rating
    if rating is not None or t.feedback_comment:
        said = f' "{" ".join(t.feedback_comment.split())}"' if t.feedback_comment else ""
        lines.append(f"  feedback: rating {_number(rating)}{said}")
    else:
        lines.append("  feedback: -")
    for name, result in sorted((t.evaluations or {}).items()):
        got = result if isinstance(result, Mapping) else {}
        said = " ".join(
            f"{k}={got[k]}" for k in ("score", "label", "explanation") if got.get(k) is not None
        )
        lines.append(f"  app evaluation {name}: {said or '-'}")
    if t.spans:
        lines.append(f"  spans: {len(t.spans)} stored (`--json` lists them)")
    if detail.slices:
        lines.append("  slices:")
        lines.extend(f"    {k}: {v}" for k, v in sorted(detail.slices.items()))
    lines.append("scores:")
    if not detail.scores:
        lines.append("  none yet (the jobs have not evaluated this trace)")
    for job, metric, outcome in detail.scores:
        lines.append(f"  {metric:28s} {outcome_text(outcome):>12s}   ({job})")
        reason = detail.reasons.get(metric.split("@", 1)[0])
        if reason and not isinstance(outcome, dict):
            lines.append(f"  {'':28s} └ {reason}")
    return lines


def _judge_lines(t: Any) -> list[str]:
    if all(v is None for v in (t.judge_decision, t.judge_score, t.judge_model, t.judge_latency_ms)):
        return ["  judge: -"]
    decision = {True: "shown", False: "withheld", None: "no decision"}[t.judge_decision]
    parts = [decision]
    if t.judge_score is not None:
        parts.append(f"score {t.judge_score:g}")
    if t.judge_model:
        parts.append(f"model {t.judge_model}")
    if t.judge_latency_ms is not None:
        parts.append(f"{t.judge_latency_ms:g} ms")
    return [f"  judge: {', '.join(parts)}"]


def _truth_lines(shown: ShownTrace) -> list[str]:
    t = shown.detail.trace
    parts = []
    if t.relevant_ids is not None:
        parts.append(f"relevant_ids {', '.join(map(str, t.relevant_ids)) or '(none)'}")
    if t.relevance:
        parts.append(f"relevance {_pairs(t.relevance)}")
    if t.shown_url:
        parts.append(f"shown_url {', '.join(map(str, t.shown_url))}")
    if t.judge_label is not None:
        parts.append(f"judge_label {str(t.judge_label).lower()}")
    lines = [f"  ground truth: {'; '.join(parts) if parts else '-'}"]
    if t.reference:
        lines += _text("reference:", t.reference)
    for metric, labeler, value in shown.labels:
        lines.append(f"  label {metric}: {value:g}" + (f" (by {labeler})" if labeler else ""))
    return lines


def outcome_text(outcome: Any) -> str:
    """A stored outcome for a person: the value, or why there is none."""
    if isinstance(outcome, dict):
        if outcome.get("transient") is True:
            return f"retrying: {outcome.get('error')}"
        if "error" in outcome:
            return f"error: {outcome['error']}"
        return f"skipped: {outcome.get('skipped')}"
    return f"{float(outcome):.3f}"
