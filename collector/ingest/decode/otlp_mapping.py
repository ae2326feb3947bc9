"""OpenInference / OpenTelemetry GenAI span attributes -> span summaries -> one trace record.

A *span summary* is the small JSON-ready contribution of one span (its question/answer
candidates, retrieved documents, ids, model, token usage, times). A stored OTLP trace keeps
the summaries of every span seen so far (`traces.spans`), and its fields are recomputed by
`record_from_spans` from that set alone — so fragments arriving in any order, or twice,
give the same trace. Choices are deterministic: the root span (no parent) wins, then
CHAIN/AGENT spans, then LLM spans, then any other; ties break on start time and span id.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from collector.ingest.decode import optional as opt
from collector.ingest.decode.limits import DEFAULT_MAX_DEPTH, depth_within
from collector.ingest.decode.optional import INVALID_KEY, FieldIssues
from collector.store.records import ContextRecord, TraceRecord

_CHAIN_KINDS = frozenset({"CHAIN", "AGENT"})
_TAG_PREFIX = "ragpulse.tag."
RESOURCE_TAGS = (("service.name", "service"), ("service.version", "version"))
"""Resource attributes kept as tags (a `ragpulse.tag.<name>` span attribute wins)."""
SHOWN_URL_ATTRIBUTE = "ragpulse.shown_url"
"""Span attribute (string or string array) carrying the trace field `shown_url`."""


def summarize_span(
    attrs: Mapping[str, Any],
    *,
    parent: str,
    name: str,
    start_ns: int,
    end_ns: int,
    resource: Mapping[str, Any],
    issues: FieldIssues | None = None,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> dict[str, Any]:
    """The contribution of one span; only keys with a value are kept.

    Values that do not fit (a `metadata` attribute that is not a JSON object of at most
    `max_depth` levels, a non-finite score or tag, a `ragpulse.shown_url` that is not a
    string or list of strings) are left out, kept as text under the summary's `invalid`
    (then `metadata["_invalid"]` of the trace) and reported to `issues`.
    """
    issues = issues if issues is not None else FieldIssues()
    kind = str(attrs.get("openinference.span.kind") or "").upper()
    if not kind and any(
        k.startswith("gen_ai.") and not k.startswith("gen_ai.evaluation.") for k in attrs
    ):
        kind = "LLM"  # an evaluator's span (gen_ai.evaluation.* only) is no LLM call
    out: dict[str, Any] = {"parent": parent, "kind": kind, "name": name}
    out["start"] = start_ns
    out["end"] = end_ns
    question = _input_text(attrs, kind)
    if question is not None:
        out["input"] = question
    answer = _output_text(attrs, kind)
    if answer is not None:
        out["output"] = answer
    docs = _documents(attrs, "retrieval.documents.", issues, max_depth)
    if docs:
        out["docs"] = docs
    reranked = _documents(attrs, "reranker.output_documents.", issues, max_depth)
    if reranked:
        out["reranked"] = reranked
    for key, names in (
        ("session_id", ("session.id", "gen_ai.conversation.id")),
        ("user_id", ("user.id", "enduser.id")),
        ("model", ("llm.model_name", "gen_ai.response.model", "gen_ai.request.model")),
    ):
        value = _first_str(attrs, names)
        if value is not None:
            out[key] = value[:256]  # bounded columns; an OTLP span is not rejected for it
    usage = _usage(attrs)
    if usage:
        out["usage"] = usage
    metadata = attrs.get("metadata")
    if metadata is not None:
        parsed = _json_object(metadata, max_depth) if isinstance(metadata, str) else None
        if parsed is not None:
            out["metadata"] = parsed
        else:
            issues.keep("metadata", _as_text(metadata))
    shown = attrs.get(SHOWN_URL_ATTRIBUTE)
    if shown is not None:
        urls = opt.urls(shown, "shown_url", scratch := FieldIssues())
        if urls:
            out["shown_url"] = list(urls)
        elif scratch:
            issues.keep("shown_url", _as_text(shown))
    tags: dict[str, Any] = {}
    for k, v in attrs.items():
        if k.startswith(_TAG_PREFIX) and isinstance(v, str | int | float):
            if isinstance(v, float) and not math.isfinite(v):
                issues.keep(f"tags.{k[len(_TAG_PREFIX) :]}", _as_text(v))
            else:
                tags[k[len(_TAG_PREFIX) :]] = v
    # the application's own resource attributes, unless a tag says otherwise: the
    # deployed service.version is a version (`versions.sources`, default `version`)
    for attribute, tag in RESOURCE_TAGS:
        value = resource.get(attribute)
        if isinstance(value, str):
            tags.setdefault(tag, value)
    if tags:
        out["tags"] = tags
    if issues:
        out["invalid"] = dict(issues.raw)
    return out


def _as_text(value: Any) -> str:
    """A raw attribute value as text (it may hold NaN, which JSON cannot store)."""
    return value if isinstance(value, str) else repr(value)


def record_from_spans(trace_id: str, spans: Mapping[str, Mapping[str, Any]]) -> TraceRecord:
    """The trace as known from these span summaries (pure, order-independent)."""
    ordered = sorted(spans.items(), key=lambda item: (item[1]["start"], item[0]))
    ranked = sorted(ordered, key=lambda item: _rank(item[1]))
    root = next((s for _, s in ordered if not s["parent"]), None)

    def pick(key: str) -> Any:
        return next((s[key] for _, s in ranked if key in s), None)

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
        docs = [d for _, s in ordered for d in s.get("docs", ())]
    usage: dict[str, int | float] = {}
    for _, s in ordered:
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
    return TraceRecord(
        trace_id=trace_id,
        timestamp=datetime.fromtimestamp(start // 10**9, UTC)
        + timedelta(microseconds=start % 10**9 // 1000),
        question=pick("input") or "",
        answer=answer,
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
    )


_STAGES = {
    "RETRIEVER": "retrieval",
    "RERANKER": "rerank",
    "EMBEDDING": "embedding",
    "LLM": "generation",
}


def _stages(spans: Iterable[Mapping[str, Any]]) -> dict[str, float] | None:
    """Per-stage latencies (ms): the summed durations of the retriever, reranker, embedding
    and LLM spans below the root (the same stages a JSON trace may send)."""
    out: dict[str, float] = {}
    for span in spans:
        stage = _STAGES.get(span["kind"])
        if stage is not None and span["parent"]:
            out[stage] = out.get(stage, 0.0) + (span["end"] - span["start"]) / 1e6
    return out or None


def _rank(span: Mapping[str, Any]) -> int:
    if not span["parent"]:
        return 0
    if span["kind"] in _CHAIN_KINDS:
        return 1
    if span["kind"] == "LLM":
        return 2
    return 3


def _first_str(attrs: Mapping[str, Any], names: tuple[str, ...]) -> str | None:
    for name in names:
        value = attrs.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def _json_object(text: str, max_depth: int = DEFAULT_MAX_DEPTH) -> dict[str, Any] | None:
    """A JSON object of at most `max_depth` levels (no NaN, no RecursionError), or None."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict) or not depth_within(value, max_depth):
        return None
    return value


def _unwrap(text: str, mime: Any, keys: tuple[str, ...]) -> str:
    """A JSON `input.value`/`output.value` holding the text under a well-known key."""
    if mime == "application/json":
        obj = _json_object(text)
        if obj is not None:
            for key in keys:
                if isinstance(obj.get(key), str):
                    return str(obj[key])
    return text


def _messages(attrs: Mapping[str, Any], prefix: str) -> list[tuple[str, str]]:
    out = []
    i = 0
    while f"{prefix}{i}.message.role" in attrs or f"{prefix}{i}.message.content" in attrs:
        role = attrs.get(f"{prefix}{i}.message.role")
        content = attrs.get(f"{prefix}{i}.message.content")
        if isinstance(content, str):
            out.append((str(role or ""), content))
        i += 1
    return out


def _input_text(attrs: Mapping[str, Any], kind: str) -> str | None:
    if kind == "LLM":
        users = [c for role, c in _messages(attrs, "llm.input_messages.") if role == "user"]
        if users:
            return users[-1]
    value = attrs.get("input.value")
    if isinstance(value, str):
        return _unwrap(value, attrs.get("input.mime_type"), ("question", "query", "input"))
    return None


def _output_text(attrs: Mapping[str, Any], kind: str) -> str | None:
    if kind == "LLM":
        replies = [c for role, c in _messages(attrs, "llm.output_messages.") if role != "user"]
        if replies:
            return replies[0]
    value = attrs.get("output.value")
    if isinstance(value, str):
        return _unwrap(value, attrs.get("output.mime_type"), ("answer", "output", "response"))
    return None


def _documents(
    attrs: Mapping[str, Any], prefix: str, issues: FieldIssues, max_depth: int
) -> list[dict[str, Any]]:
    """`{prefix}{i}.document.{id,content,score,metadata}` in index order."""
    indexes: set[int] = set()
    for key in attrs:
        if key.startswith(prefix):
            head = key[len(prefix) :].split(".", 1)[0]
            if head.isdigit():
                indexes.add(int(head))
    docs = []
    for i in sorted(indexes):
        base = f"{prefix}{i}.document."
        doc: dict[str, Any] = {}
        doc_id = attrs.get(base + "id")
        if doc_id is not None and not isinstance(doc_id, bool):
            doc["id"] = str(doc_id)
        content = attrs.get(base + "content")
        if isinstance(content, str):
            doc["text"] = content
        score = attrs.get(base + "score")
        if isinstance(score, int | float) and not isinstance(score, bool):
            if math.isfinite(score):
                doc["score"] = float(score)
            else:
                issues.keep(f"contexts[{i}].score", _as_text(score))
        meta = attrs.get(base + "metadata")
        meta_obj = _json_object(meta, max_depth) if isinstance(meta, str) else None
        url = meta_obj.get("url") if meta_obj else None
        if isinstance(url, str):
            doc["url"] = url
        docs.append(doc)
    return docs


def _usage(attrs: Mapping[str, Any]) -> dict[str, int]:
    prompt = _count(attrs, "llm.token_count.prompt", "gen_ai.usage.input_tokens")
    completion = _count(attrs, "llm.token_count.completion", "gen_ai.usage.output_tokens")
    total = _count(attrs, "llm.token_count.total", "gen_ai.usage.total_tokens")
    usage = {}
    if prompt is not None:
        usage["prompt_tokens"] = prompt
    if completion is not None:
        usage["completion_tokens"] = completion
    if total is None and (prompt is not None or completion is not None):
        total = (prompt or 0) + (completion or 0)
    if total is not None:
        usage["total_tokens"] = total
    return usage


def _count(attrs: Mapping[str, Any], *names: str) -> int | None:
    for name in names:
        value = attrs.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None
