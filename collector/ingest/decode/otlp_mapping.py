"""Span attributes -> span summaries -> one trace record.

A *span summary* is the small JSON-ready contribution of one span (its question/answer
candidates, retrieved documents, ids, model, token usage, times, the conventions it was
read with). Each instrumentation convention (`conventions/`) detected on the span gives
its fields, merged in the registry's precedence order. A stored OTLP trace keeps the
summaries of every span seen so far (`traces.spans`), and its fields are recomputed by
`record_from_spans` from that set alone — so fragments arriving in any order, or twice,
give the same trace. Choices are deterministic: the root span (no parent) wins, then
CHAIN/AGENT spans, then LLM spans, then any other; ties break on start time and span id —
except that the question, when neither the root nor a CHAIN/AGENT span has one, is the
first retrieval's query before a model's prompt. A summary marked `of` (a log record's part
of a span, `otlp_details`) is folded into its span's first. Token usage is the sum over the
spans reporting it, less those with usage reported below them (a wrapper's span repeats its
inner calls' tokens). A trace that is no user request (`requests.py`) keeps no question nor
answer. The documents are the outermost retrievals' (a nested one only fills what they
lack).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from collector.ingest.decode import requests
from collector.ingest.decode.conventions import registry
from collector.ingest.decode.conventions.attributes import RESOURCE, Attribute
from collector.ingest.decode.conventions.base import (
    AGENT,
    CHAIN,
    EMBEDDING,
    LLM,
    RERANKER,
    RETRIEVER,
    Event,
    RecordingAttrs,
    Span,
)
from collector.ingest.decode.limits import DEFAULT_MAX_DEPTH
from collector.ingest.decode.optional import INVALID_KEY, FieldIssues
from collector.store.records import ContextRecord, TraceRecord

_CHAIN_KINDS = frozenset({CHAIN, AGENT})
_MERGED = frozenset({"tags", "metadata", "usage"})
"""Dict fields merged key by key across conventions (the earlier convention wins a key)."""
_BOUNDED = ("session_id", "user_id", "model")
"""Bounded columns: longer values are cut (an OTLP span is not rejected for them)."""
RESOURCE_TAGS = (("service.name", "service"), ("service.version", "version"))
"""Resource attributes kept as tags (a `ragpulse.tag.<name>` span attribute wins)."""
RESOURCE_ATTRIBUTES = tuple(
    Attribute(name, "string", f"the tag `{tag}`, unless a span tags `{tag}` itself", on=RESOURCE)
    for name, tag in RESOURCE_TAGS
)
"""What every OTLP trace's resource gives, whatever the convention (for the docs)."""


def summarize_span(
    attrs: Mapping[str, Any],
    *,
    parent: str,
    name: str,
    start_ns: int,
    end_ns: int,
    resource: Mapping[str, Any],
    scope: str = "",
    events: Sequence[Event] = (),
    issues: FieldIssues | None = None,
    max_depth: int = DEFAULT_MAX_DEPTH,
    used: set[str] | None = None,
) -> dict[str, Any]:
    """The contribution of one span; only keys with a value are kept.

    Values that do not fit (a `metadata` attribute that is not a JSON object of at most
    `max_depth` levels, a non-finite score or tag, a `ragpulse.shown_url` that is not a
    string or list of strings) are left out, kept as text under the summary's `invalid`
    (then `metadata["_invalid"]` of the trace) and reported to `issues`. When `used` is
    given, it receives every attribute key a convention read (for the inspect command).
    """
    issues = issues if issues is not None else FieldIssues()
    seen = RecordingAttrs(attrs, used) if used is not None else attrs
    span = Span(attrs=seen, name=name, scope=scope, events=tuple(events), max_depth=max_depth)
    out: dict[str, Any] = {"parent": parent, "kind": "", "name": name}
    out["start"] = start_ns
    out["end"] = end_ns
    found = registry.detect(span)
    for convention in found:
        for key, value in convention.read(span, issues).items():
            if key == "kind":
                out["kind"] = out["kind"] or value
            elif key in _MERGED and key in out:
                out[key] = {**value, **out[key]}
            else:
                out.setdefault(key, value)
    for key in _BOUNDED:
        if key in out:
            out[key] = out[key][:256]
    # the application's own resource attributes, unless a tag says otherwise: the
    # deployed service.version is a version (`versions.sources`, default `version`)
    tags = dict(out.get("tags", {}))
    for attribute, tag in RESOURCE_TAGS:
        value = resource.get(attribute)
        if isinstance(value, str):
            tags.setdefault(tag, value)
    if tags:
        out["tags"] = tags
    if found:
        out["conv"] = [c.name for c in found]
    if issues:
        out["invalid"] = dict(issues.raw)
    return out


def record_from_spans(trace_id: str, spans: Mapping[str, Mapping[str, Any]]) -> TraceRecord:
    """The trace as known from these span summaries (pure, order-independent)."""
    spans = fold_completions(spans)
    ordered = sorted(spans.items(), key=lambda item: (item[1]["start"], item[0]))
    ranked = sorted(ordered, key=lambda item: _rank(item[1]))
    root = next((s for _, s in ordered if not s["parent"]), None)

    def pick(key: str) -> Any:
        return next((s[key] for _, s in ranked if key in s), None)

    question = next((s["input"] for _, s in ranked if "input" in s and _rank(s) < 2), None)
    if question is None:  # a retrieval's query is the user's words; a prompt is a template
        queries = (s["input"] for _, s in ordered if s["kind"] == RETRIEVER and "input" in s)
        question = next(queries, None)
    answer = next((s["output"] for _, s in ranked if "output" in s and _rank(s) < 2), None)
    if answer is None:  # the last LLM call (by end time) produced the shown answer
        llm = [s for _, s in ordered if "output" in s]
        if llm:
            answer = max(llm, key=lambda s: (s["end"], s["start"]))["output"]
    model = None
    with_model = [s for _, s in ordered if "model" in s]
    if with_model:
        model = max(with_model, key=lambda s: (s["end"], s["start"]))["model"]
    rerankers = [s for _, s in ordered if "reranked" in s]
    if rerankers:
        docs = max(rerankers, key=lambda s: (s["end"], s["start"]))["reranked"]
    else:
        docs = _retrieved(spans, ordered)
    usage: dict[str, int | float] = {}
    aggregates = _usage_aggregates(spans)
    for span_id, s in ordered:
        if span_id in aggregates:
            continue
        for key, value in s.get("usage", {}).items():
            usage[key] = usage.get(key, 0) + value
    tags: dict[str, Any] = {}
    for _, s in reversed(ranked):
        tags.update(s.get("tags", {}))
    metadata: dict[str, Any] = {}
    for _, s in reversed(ranked):
        metadata.update(s.get("metadata", {}))
    invalid: dict[str, Any] = {}
    for _, s in reversed(ranked):
        invalid.update(s.get("invalid", {}))
    if invalid:
        metadata[INVALID_KEY] = invalid
    shown = pick("shown_url")
    start = min(s["start"] for _, s in ordered)
    not_request = requests.not_request(s for _, s in ordered)
    return TraceRecord(
        trace_id=trace_id,
        timestamp=datetime.fromtimestamp(start // 10**9, UTC)
        + timedelta(microseconds=start % 10**9 // 1000),
        question="" if not_request else question or pick("input") or "",
        answer=None if not_request else answer,
        contexts=tuple(ContextRecord(**d) for d in docs),
        session_id=pick("session_id"),
        user_id=pick("user_id"),
        model=model,
        usage=usage or None,
        latency_ms=(root["end"] - root["start"]) / 1e6 if root is not None else None,
        latency_stages=_stages(s for _, s in ordered),
        tags=tags or None,
        metadata=metadata or None,
        source="otlp",
        shown_urls=tuple(shown) if shown else None,
        not_request=not_request,
    )


def _usage_aggregates(spans: Mapping[str, Mapping[str, Any]]) -> set[str]:
    """The spans whose token usage is already counted below them: an ancestor of a span
    reporting usage (LlamaIndex's `chat` span over the `complete` it wraps reports the same
    tokens again; so does a framework's LLM span over an instrumented client's call)."""
    out: set[str] = set()
    for span in spans.values():
        if "usage" not in span:
            continue
        parent = span["parent"]
        while parent and parent in spans and parent not in out:
            out.add(parent)
            parent = spans[parent]["parent"]
    return out


_STRUCTURAL = frozenset({"parent", "kind", "name", "start", "end", "of", "conv"})


def fold_completions(
    spans: Mapping[str, Mapping[str, Any]],
) -> Mapping[str, Mapping[str, Any]]:
    """Summaries marked `of: <span id>` (what a log record adds to a span, `otlp_details`)
    folded into that span's summary when it is known: a field the span lacks is taken, dict
    fields merge key by key, the span's own values win. Unknown targets stay as they are."""
    extras = [(key, s) for key, s in spans.items() if s.get("of") in spans and key != s["of"]]
    if not extras:
        return spans
    out = dict(spans)
    for key, extra in sorted(extras, key=lambda item: item[0]):
        target = dict(out[extra["of"]])
        for name, value in extra.items():
            if name in _STRUCTURAL:
                continue
            if isinstance(value, dict) and isinstance(target.get(name), dict):
                target[name] = {**value, **target[name]}
            else:
                target.setdefault(name, value)
        out[extra["of"]] = target
        del out[key]
    return out


def _retrieved(
    spans: Mapping[str, Mapping[str, Any]], ordered: Sequence[tuple[str, Mapping[str, Any]]]
) -> list[dict[str, Any]]:
    """The retrieved documents: those of each outermost span with documents, in start
    order. Documents of a span nested below another's (a vector-DB client's query below a
    framework's retriever, a retriever wrapping another) are the same retrieval seen closer
    to the store: they only fill the id, score, url or text that the outer document with
    the same text (else id) lacks."""
    with_docs = {sid for sid, s in ordered if s.get("docs")}
    outer: list[tuple[str, Mapping[str, Any]]] = []
    inner: dict[str, list[Mapping[str, Any]]] = {}
    for sid, s in ordered:
        if sid in with_docs:
            top = _outermost(sid, spans, with_docs)
            if top is None:
                outer.append((sid, s))
            else:
                inner.setdefault(top, []).extend(s["docs"])
    out = []
    for sid, s in outer:
        for found in s["docs"]:
            doc = dict(found)
            key = "text" if "text" in doc else "id"
            same = next(
                (d for d in inner.get(sid, ()) if key in doc and d.get(key) == doc[key]), {}
            )
            for field in ("id", "score", "url", "text"):
                if field not in doc and field in same:
                    doc[field] = same[field]
            out.append(doc)
    return out


def _outermost(sid: str, spans: Mapping[str, Mapping[str, Any]], among: set[str]) -> str | None:
    """The outermost ancestor of span `sid` that is `among` these (None when none is, or
    when the parents run in a circle: corrupt input keeps its documents)."""
    top, seen, parent = None, {sid}, spans[sid]["parent"]
    while parent in spans:
        if parent in seen:
            return None
        seen.add(parent)
        top = parent if parent in among else top
        parent = spans[parent]["parent"]
    return top


_STAGES = {
    RETRIEVER: "retrieval",
    RERANKER: "rerank",
    EMBEDDING: "embedding",
    LLM: "generation",
}


def _stages(spans: Iterable[Mapping[str, Any]]) -> dict[str, float] | None:
    """Per-stage latencies (ms): the wall time of the retriever, reranker, embedding and
    LLM spans below the root (the same stages a JSON trace may send) — the union of their
    intervals, so nested spans (an LLM span inside another) and parallel ones (two
    retrievers at once) count once."""
    intervals: dict[str, list[tuple[int, int]]] = {}
    for span in spans:
        stage = _STAGES.get(span["kind"])
        if stage is not None and span["parent"]:
            intervals.setdefault(stage, []).append((span["start"], span["end"]))
    return {stage: union_ns(spans) / 1e6 for stage, spans in intervals.items()} or None


def union_ns(intervals: Iterable[tuple[int, int]]) -> int:
    """The total length of the union of [start, end] intervals."""
    total = 0
    reached: int | None = None
    for start, end in sorted(intervals):
        if reached is not None and start < reached:
            if end > reached:
                total += end - reached
                reached = end
        else:
            total += end - start
            reached = end
    return total


def _rank(span: Mapping[str, Any]) -> int:
    if not span["parent"]:
        return 0
    if span["kind"] in _CHAIN_KINDS:
        return 1
    if span["kind"] == "LLM":
        return 2
    return 3
