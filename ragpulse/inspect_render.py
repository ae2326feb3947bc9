"""`ragpulse inspect`'s text output: one block per trace, then its spans as a tree.

Long texts are cut (the JSON output, `--json`, has them whole), and attribute keys that
differ only by a list index (`retrieval.documents.0.document.id`, `…1…`) are shown once
with a `*` and their count, so a span with forty messages stays readable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping

from collector.ingest.otlp_inspect import STORED, SpanReading, TraceReading

TEXT = 300
CONTEXT_TEXT = 120
_INDEX = re.compile(r"\.\d+(?=\.|$)")


def cut(text: str, limit: int) -> str:
    """`text` on one line, at most `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def collapse(keys: Iterable[str]) -> list[str]:
    """Keys with their list indexes folded: `a.*.b (×3)` for `a.0.b`, `a.1.b`, `a.2.b`."""
    groups: dict[str, list[str]] = {}
    for key in sorted(keys):
        groups.setdefault(_INDEX.sub(".*", key), []).append(key)
    return [
        members[0] if len(members) == 1 else f"{pattern} (×{len(members)})"
        for pattern, members in groups.items()
    ]


def _pairs(values: Mapping[str, object]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(values.items()))


def render_trace(trace: TraceReading) -> list[str]:
    record = trace.record
    got = trace.completeness
    spans = f"{len(trace.spans)} span{'s' if len(trace.spans) != 1 else ''}"
    lines = [f"trace {trace.trace_id}  ({spans} from {_sources(trace)})"]
    lines.append(
        f"  conventions: {', '.join(got.conventions)}   "
        f"missing: {', '.join(got.missing) if got.missing else 'nothing'}"
    )
    if record.not_request:
        lines.append(
            f"  not a request: {record.not_request} (stored without a question, never "
            "sampled nor evaluated)"
        )
    if not trace.has_root:
        lines.append(
            "  root span: not among these messages, so the trace is partial (its other spans "
            "are in messages not read; try a larger --look-back, or --trace-id)"
        )
    lines.append(f"  question: {cut(record.question, TEXT) if record.question else '-'}")
    lines.append(f"  answer:   {cut(record.answer, TEXT) if record.answer else '-'}")
    lines.append(f"  contexts: {len(record.contexts)}")
    for i, context in enumerate(record.contexts, 1):
        described = _pairs(
            {
                k: v
                for k, v in (("id", context.id), ("score", context.score), ("url", context.url))
                if v is not None
            }
        )
        lines.append(f"    [{i}] {described or '(no id, score or url)'}")
        lines.append(f"        {cut(context.text, CONTEXT_TEXT) if context.text else '(no text)'}")
    who = {"session": record.session_id, "user": record.user_id, "model": record.model}
    lines.append("  " + "   ".join(f"{k}: {v or '-'}" for k, v in who.items()))
    usage = " ".join(f"{k}={v}" for k, v in (record.usage or {}).items())
    lines.append(f"  usage: {usage or '-'}")
    total = "-" if record.latency_ms is None else f"{record.latency_ms:.1f} ms"
    stages = ", ".join(f"{k} {v:.1f} ms" for k, v in sorted((record.latency_stages or {}).items()))
    lines.append(f"  latency: {total}" + (f" (stages: {stages})" if stages else ""))
    lines.append(f"  tags: {_pairs(record.tags) if record.tags else '-'}")
    if record.metadata:
        lines.append(f"  metadata: {cut(json.dumps(record.metadata, ensure_ascii=False), TEXT)}")
    if record.shown_urls:
        lines.append(f"  shown_url: {', '.join(record.shown_urls)}")
    if trace.warnings:
        lines.append(f"  kept raw (did not fit): {', '.join(trace.warnings)}")
    lines.append(f"  spans ({len(trace.spans)}):")
    for depth, span in _tree(trace.spans):
        lines.extend(_span_lines(span, "    " + "  " * depth))
    return lines


def _sources(trace: TraceReading) -> str:
    messages = [s for s in trace.sources if s != STORED]
    n = len(messages)
    shown = ", ".join(messages[:3]) + (", …" if n > 3 else "")
    said = f"{n} message{'s' if n != 1 else ''}: {shown}" if n else ""
    if len(messages) < len(trace.sources):
        said = f"{said} and the store" if said else "the store"
    return said


def _span_lines(span: SpanReading, indent: str) -> list[str]:
    conventions = ", ".join(span.conventions) if span.conventions else "no convention"
    head = f"{indent}{span.name or '(unnamed)'}  {span.kind or '-'}  [{conventions}]"
    out = [head + (f"  scope {span.scope}" if span.scope else "")]
    if span.stored_only:
        out.append(f"{indent}  from the store (its attributes are not kept there)")
        return out
    out.append(f"{indent}  used:   {', '.join(collapse(span.used)) or '-'}")
    out.append(f"{indent}  unread: {', '.join(collapse(span.unread)) or '-'}")
    if span.events:
        out.append(f"{indent}  events: {', '.join(span.events)}")
    return out


def _tree(spans: Iterable[SpanReading]) -> list[tuple[int, SpanReading]]:
    """Spans depth-first under their parents (start order among siblings); a span whose
    parent is not among them starts a tree of its own."""
    spans = list(spans)
    ids = {s.span_id for s in spans}
    children: dict[str, list[SpanReading]] = {}
    roots = []
    for span in spans:
        if span.parent and span.parent in ids and span.parent != span.span_id:
            children.setdefault(span.parent, []).append(span)
        else:
            roots.append(span)
    out: list[tuple[int, SpanReading]] = []
    placed: set[str] = set()

    def visit(span: SpanReading, depth: int) -> None:
        if span.span_id in placed:
            return
        placed.add(span.span_id)
        out.append((depth, span))
        for child in children.get(span.span_id, ()):
            visit(child, depth + 1)

    for root in roots:
        visit(root, 0)
    for span in spans:  # a parent cycle: still shown, at the top
        visit(span, 0)
    return out
