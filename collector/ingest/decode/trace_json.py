"""The JSON trace contract (SPEC §2): bytes -> object -> validated `TraceRecord`/`FeedbackEvent`.

`decode_json_message` checks the envelope (empty, size, UTF-8, JSON syntax, top-level
object, nesting depth, duplicate keys); `parse_trace_record` / `parse_feedback_event` check
the fields (a trace's optional ones leniently, see `optional`); `parse_message`
picks one by the `type` field and the topic. Unknown extra fields are ignored, not stored.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import replace
from typing import Any, Final, NoReturn

import orjson

from collector.ingest.decode import fields as f
from collector.ingest.decode import optional as opt
from collector.ingest.decode.errors import (
    EMPTY,
    INVALID_JSON,
    INVALID_VALUE,
    NOT_UTF8,
    OVERSIZED,
    TOO_DEEP,
    UNKNOWN_SCHEMA,
    DecodeError,
)
from collector.ingest.decode.limits import DEFAULT_MAX_DEPTH, check_structure
from collector.store.records import ContextRecord, FeedbackEvent, JudgeRecord, TraceRecord
from evaluators.labels import MAX_LABELER

DEFAULT_MAX_BYTES = 1024 * 1024
INVALID_KEY: Final = opt.INVALID_KEY
TOTAL_KEY: Final = "total"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_decoder = json.JSONDecoder(parse_constant=_reject_constant)


def decode_json_message(
    value: bytes | None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> dict[str, Any]:
    """Decode one Kafka message value into a JSON object, or raise `DecodeError`.

    orjson parses the common, valid case; anything it rejects is re-parsed with the
    standard library only to name the precise problem (byte offset, line and column).
    A message nested deeper than `max_depth` or repeating a key in an object is refused
    (`collector.ingest.decode.limits`).
    """
    if not value or value.isspace():
        raise DecodeError(EMPTY, "message value is empty" if not value else "only whitespace")
    if len(value) > max_bytes:
        raise DecodeError(OVERSIZED, f"message is {len(value)} bytes, limit is {max_bytes}")
    if value[:3] == b"\xef\xbb\xbf":
        value = value[3:]
    try:
        obj = orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        _explain(value, exc)
    if type(obj) is not dict:
        raise f.wrong_type("top level", "object", obj)
    check_structure(value, obj, max_depth)
    # a backslash first: a one-byte search (memchr), where the six-byte one costs ~7 µs
    # per 8 KB message
    if b"\\" in value and b"\\u0000" in value and _has_nul(obj):
        raise DecodeError(INVALID_VALUE, "a string contains U+0000 (NUL), which cannot be stored")
    return obj


def _explain(value: bytes, fast_error: orjson.JSONDecodeError) -> NoReturn:
    """Raise the precise `DecodeError` for a payload orjson rejected."""
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError(
            NOT_UTF8, f"invalid UTF-8 at byte offset {exc.start}: {exc.reason}"
        ) from None
    if "depth limit" in str(fast_error):  # orjson stops at 1024 levels
        raise DecodeError(TOO_DEEP, "nesting depth exceeds 1024 levels") from None
    try:
        _decoder.decode(text)
    except RecursionError:
        raise DecodeError(TOO_DEEP, "nesting too deep to parse") from None
    except json.JSONDecodeError as exc:
        raise DecodeError(
            INVALID_JSON, f"{exc.msg} at line {exc.lineno} column {exc.colno} (char {exc.pos})"
        ) from None
    except ValueError as exc:  # NaN/Infinity, or an integer too long to convert
        raise DecodeError(INVALID_JSON, str(exc)) from None
    # valid for the standard library but not storable: a lone surrogate, an integer
    # beyond 64 bits, a number overflowing to infinity
    raise DecodeError(INVALID_JSON, str(fast_error))


def _has_nul(value: Any) -> bool:
    if type(value) is str:
        return "\x00" in value
    if type(value) is dict:
        return any("\x00" in k or _has_nul(v) for k, v in value.items())
    if type(value) is list:
        return any(_has_nul(v) for v in value)
    return False


def parse_message(
    obj: dict[str, Any], *, feedback_topic: bool = False
) -> TraceRecord | FeedbackEvent:
    """Validate an object from a trace or feedback topic by its `type` field."""
    kind = obj.get("type")
    if kind is None:
        kind = "feedback" if feedback_topic else "trace"
    elif type(kind) is not str:
        raise f.wrong_type("type", "string", kind)
    if kind == "feedback":
        return parse_feedback_event(obj)
    if kind == "trace" and not feedback_topic:
        return parse_trace_record(obj)
    where = "on the feedback topic " if feedback_topic else ""
    expected = "feedback" if feedback_topic else "trace or feedback"
    raise DecodeError(UNKNOWN_SCHEMA, f"type: {kind[:64]!r} {where}is not {expected}")


def parse_trace_record(obj: dict[str, Any]) -> TraceRecord:
    """Validate one JSON trace object (SPEC §2).

    Required fields are strict: a bad one raises `DecodeError` naming it. An optional field
    of an unexpected shape never costs the trace (`collector.ingest.decode.optional`): it is left
    out of the record, kept raw under `metadata["_invalid"][path]` and named in
    `field_warnings`.
    """
    if type(obj) is not dict:
        raise f.wrong_type("top level", "object", obj)
    tid = f.trace_id(f.required(obj, "trace_id"))
    ts = f.timestamp(f.required(obj, "timestamp"), "timestamp")
    question = f.required(obj, "question")
    if type(question) is not str:
        raise f.wrong_type("question", "string", question)
    get = obj.get
    issues = opt.FieldIssues()
    latency_ms, stages = _latency(get("latency_ms"), issues)
    hit, similarity = _cache(get("cache"), issues)
    metadata = get("metadata")
    if metadata is not None and type(metadata) is not dict:
        issues.keep("metadata", metadata)
        metadata = None
    record = TraceRecord(
        trace_id=tid,
        timestamp=ts,
        question=question,
        answer=opt.text(get("answer"), "answer", issues),
        contexts=_contexts(get("contexts"), issues),
        session_id=opt.ident(get("session_id"), "session_id", issues),
        user_id=opt.ident(get("user_id"), "user_id", issues),
        turn=opt.integer(get("turn"), "turn", issues),
        reference=opt.text(get("reference"), "reference", issues),
        relevant_ids=opt.str_list(get("relevant_ids"), "relevant_ids", issues),
        relevance=opt.grades(get("relevance"), "relevance", issues),
        judge=_judge(get("judge"), issues),
        judge_label=opt.boolean(get("judge_label"), "judge_label", issues),
        cache_hit=hit,
        cache_similarity=similarity,
        model=opt.text(get("model"), "model", issues, 256),
        usage=_usage(get("usage"), issues),
        latency_ms=latency_ms,
        tags=opt.tags(get("tags"), "tags", issues),
        metadata=metadata,
        shown_urls=opt.urls(get("shown_url"), "shown_url", issues),
        latency_stages=stages,
        labels=opt.human_labels(get("labels"), "labels", issues),
        labeler=opt.ident(get("labeler"), "labeler", issues, MAX_LABELER),
    )
    if not issues:
        return record
    return replace(
        record,
        metadata=_with_invalid(metadata, issues.raw),
        field_warnings=tuple(issues.fields),
    )


def _with_invalid(metadata: dict[str, Any] | None, raw: dict[str, Any]) -> dict[str, Any]:
    """`metadata` with the raw values that did not fit under `_invalid` (path -> value)."""
    out = dict(metadata or {})
    previous = out.get(INVALID_KEY)
    invalid = dict(previous) if type(previous) is dict else {}
    if previous is not None and type(previous) is not dict:
        invalid[f"metadata.{INVALID_KEY}"] = previous
    invalid.update(raw)
    out[INVALID_KEY] = invalid
    return out


def parse_feedback_event(obj: dict[str, Any]) -> FeedbackEvent:
    """Validate a feedback event; its hash covers the validated fields in canonical form."""
    tid = f.trace_id(f.required(obj, "trace_id"))
    ts = f.timestamp(f.required(obj, "timestamp"), "timestamp")
    judge_label = f.opt_bool(obj.get("judge_label"), "judge_label")
    relevant_ids = f.opt_str_list(obj.get("relevant_ids"), "relevant_ids")
    rating = f.opt_number(obj.get("rating"), "rating")
    comment = f.opt_str(obj.get("comment"), "comment")
    issues = opt.FieldIssues()
    labels = opt.human_labels(obj.get("labels"), "labels", issues)
    labeler = opt.ident(obj.get("labeler"), "labeler", issues, MAX_LABELER)
    canonical: dict[str, Any] = {
        "trace_id": tid,
        "timestamp": ts.isoformat(),
        "judge_label": judge_label,
        "relevant_ids": list(relevant_ids) if relevant_ids is not None else None,
        "rating": rating,
        "comment": comment,
    }
    # Only when present: events without labels keep the hash they always had.
    if labels is not None:
        canonical["labels"] = labels
    if labeler is not None:
        canonical["labeler"] = labeler
    blob = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return FeedbackEvent(
        trace_id=tid,
        timestamp=ts,
        event_hash=hashlib.sha256(blob.encode("utf-8")).hexdigest(),
        judge_label=judge_label,
        relevant_ids=relevant_ids,
        rating=rating,
        comment=comment,
        labels=labels,
        labeler=labeler,
        field_warnings=tuple(issues.fields),
    )


def _contexts(value: Any, issues: opt.FieldIssues) -> tuple[ContextRecord, ...]:
    if value is None:
        return ()
    if type(value) is not list:
        issues.keep("contexts", value)
        return ()
    out = []
    for i, item in enumerate(value):
        if type(item) is str:  # RAGAS-style retrieved_contexts: the chunk texts
            out.append(ContextRecord(text=item))
            continue
        if type(item) is not dict:  # keeps its rank, matches nothing
            issues.keep(f"contexts[{i}]", item)
            out.append(ContextRecord())
            continue
        get = item.get
        cid, url, text, score = get("id"), get("url"), get("text"), get("score")
        # hot path: check types inline, call the lenient readers only for a misfit
        if not (
            (cid is None or type(cid) is str)
            and (url is None or type(url) is str)
            and (text is None or type(text) is str)
            and (score is None or (type(score) is float and math.isfinite(score)))
        ):
            cid = opt.ident(cid, f"contexts[{i}].id", issues, 10**6)
            url = opt.text(url, f"contexts[{i}].url", issues)
            text = opt.text(text, f"contexts[{i}].text", issues)
            score = opt.number(score, f"contexts[{i}].score", issues)
        out.append(ContextRecord(cid, url, text, score))
    return tuple(out)


def _judge(value: Any, issues: opt.FieldIssues) -> JudgeRecord | None:
    if value is None:
        return None
    if type(value) is bool:  # `"judge": true` is the decision itself
        return JudgeRecord(decision=value)
    if type(value) is not dict:
        issues.keep("judge", value)
        return None
    get = value.get
    decision, score, model, latency = (
        get("decision"),
        get("score"),
        get("model"),
        get("latency_ms"),
    )
    # hot path: values that already fit; the lenient readers only for a misfit
    if not (
        (decision is None or type(decision) is bool)
        and (score is None or (type(score) is float and math.isfinite(score)))
        and (model is None or (type(model) is str and len(model) <= 256))
        and (latency is None or (type(latency) is float and 0.0 <= latency < math.inf))
    ):
        decision = opt.boolean(decision, "judge.decision", issues)
        score = opt.number(score, "judge.score", issues)
        model = opt.text(model, "judge.model", issues, 256)
        latency = opt.number(latency, "judge.latency_ms", issues, 0.0)
    return JudgeRecord(decision, score, model, latency)


def _cache(value: Any, issues: opt.FieldIssues) -> tuple[bool | None, float | None]:
    if value is None:
        return None, None
    if type(value) is bool:  # `"cache": true` is the hit itself
        return value, None
    if type(value) is not dict:
        issues.keep("cache", value)
        return None, None
    return (
        opt.boolean(value.get("hit"), "cache.hit", issues),
        opt.number(value.get("similarity"), "cache.similarity", issues),
    )


def _latency(value: Any, issues: opt.FieldIssues) -> tuple[float | None, dict[str, float] | None]:
    """`latency_ms`: a number, or per-stage latencies (total = `total`, else their sum)."""
    if type(value) is not dict:
        return opt.number(value, "latency_ms", issues, 0.0), None
    stages: dict[str, float] = {}
    for key, ms in value.items():
        got = opt.number(ms, f"latency_ms.{key}", issues, 0.0)
        if got is not None:
            stages[key] = got
    total = stages.pop(TOTAL_KEY, None)
    if not stages:
        return total, None
    if total is None:
        total = sum(stages.values())
        if not math.isfinite(total):  # finite stages can still add up past float range
            issues.keep("latency_ms", value)
            return None, None
    return total, stages


MAX_TOKENS: Final = 2**53
"""Largest token count kept (beyond it a JSON reader may lose precision)."""
_USAGE_ALIASES = (("input_tokens", "prompt_tokens"), ("output_tokens", "completion_tokens"))


def _usage(value: Any, issues: opt.FieldIssues) -> dict[str, Any] | None:
    """Tokens and cost, as sent; the GenAI names `input_tokens`/`output_tokens` also fill
    `prompt_tokens`/`completion_tokens` when those are absent.
    Token counts must be non-negative integers and `cost_usd` a non-negative number."""
    if value is None:
        return None
    if type(value) is not dict:
        issues.keep("usage", value)
        return None
    out: dict[str, Any] = {}
    for key, amount in value.items():
        kind = type(amount)
        if key.endswith("_tokens"):
            if kind is int and 0 <= amount <= MAX_TOKENS:  # hot path: already an int
                out[key] = amount
                continue
            got: Any = opt.integer(amount, f"usage.{key}", issues, 0, MAX_TOKENS)
        elif key == "cost_usd":
            if kind is float and 0.0 <= amount < math.inf:
                out[key] = amount
                continue
            got = opt.number(amount, f"usage.{key}", issues, 0.0)
        else:
            got = amount
        if got is not None:
            out[key] = got
    for alias, name in _USAGE_ALIASES:
        if name not in out and alias in out:
            out[name] = out[alias]
    return out or None
