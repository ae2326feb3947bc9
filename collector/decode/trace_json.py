"""The JSON trace contract (SPEC §2): bytes -> object -> validated `TraceRecord`/`FeedbackEvent`.

`decode_json_message` checks the envelope (empty, size, UTF-8, JSON syntax, top-level
object); `parse_trace_record` / `parse_feedback_event` check the fields; `parse_message`
picks one by the `type` field and the topic. Unknown extra fields are ignored, not stored.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, NoReturn

import orjson

from collector.decode import fields as f
from collector.decode.errors import (
    EMPTY,
    INVALID_JSON,
    INVALID_VALUE,
    NOT_UTF8,
    OVERSIZED,
    UNKNOWN_SCHEMA,
    DecodeError,
)
from collector.decode.records import ContextRecord, FeedbackEvent, JudgeRecord, TraceRecord

DEFAULT_MAX_BYTES = 1024 * 1024


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_decoder = json.JSONDecoder(parse_constant=_reject_constant)


def decode_json_message(value: bytes | None, max_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, Any]:
    """Decode one Kafka message value into a JSON object, or raise `DecodeError`.

    orjson parses the common, valid case; anything it rejects is re-parsed with the
    standard library only to name the precise problem (byte offset, line and column).
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
    if b"\\u0000" in value and _has_nul(obj):
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
    try:
        _decoder.decode(text)
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
    """Validate one JSON trace object (SPEC §2); raise `DecodeError` naming the bad field."""
    if type(obj) is not dict:
        raise f.wrong_type("top level", "object", obj)
    tid = f.trace_id(f.required(obj, "trace_id"))
    ts = f.timestamp(f.required(obj, "timestamp"), "timestamp")
    question = f.required(obj, "question")
    if type(question) is not str:
        raise f.wrong_type("question", "string", question)
    get = obj.get
    relevance = get("relevance")
    tags = get("tags")
    return TraceRecord(
        trace_id=tid,
        timestamp=ts,
        question=question,
        answer=f.opt_str(get("answer"), "answer"),
        contexts=_contexts(get("contexts")),
        session_id=f.opt_short_str(get("session_id"), "session_id"),
        user_id=f.opt_short_str(get("user_id"), "user_id"),
        turn=f.opt_int(get("turn"), "turn"),
        reference=f.opt_str(get("reference"), "reference"),
        relevant_ids=f.opt_str_list(get("relevant_ids"), "relevant_ids"),
        relevance=_relevance(relevance) if relevance is not None else None,
        judge=_judge(get("judge")),
        judge_label=f.opt_bool(get("judge_label"), "judge_label"),
        cache_hit=_cache(get("cache"), "hit"),
        cache_similarity=_cache(get("cache"), "similarity"),
        model=f.opt_short_str(get("model"), "model"),
        usage=f.opt_object(get("usage"), "usage"),
        latency_ms=f.opt_number(get("latency_ms"), "latency_ms"),
        tags=_tags(tags) if tags is not None else None,
        metadata=f.opt_object(get("metadata"), "metadata"),
    )


def parse_feedback_event(obj: dict[str, Any]) -> FeedbackEvent:
    """Validate a feedback event; its hash covers the validated fields in canonical form."""
    tid = f.trace_id(f.required(obj, "trace_id"))
    ts = f.timestamp(f.required(obj, "timestamp"), "timestamp")
    judge_label = f.opt_bool(obj.get("judge_label"), "judge_label")
    relevant_ids = f.opt_str_list(obj.get("relevant_ids"), "relevant_ids")
    rating = f.opt_number(obj.get("rating"), "rating")
    comment = f.opt_str(obj.get("comment"), "comment")
    canonical = {
        "trace_id": tid,
        "timestamp": ts.isoformat(),
        "judge_label": judge_label,
        "relevant_ids": list(relevant_ids) if relevant_ids is not None else None,
        "rating": rating,
        "comment": comment,
    }
    blob = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return FeedbackEvent(
        trace_id=tid,
        timestamp=ts,
        event_hash=hashlib.sha256(blob.encode("utf-8")).hexdigest(),
        judge_label=judge_label,
        relevant_ids=relevant_ids,
        rating=rating,
        comment=comment,
    )


def _contexts(value: Any) -> tuple[ContextRecord, ...]:
    if value is None:
        return ()
    if type(value) is not list:
        raise f.wrong_type("contexts", "array of objects or null", value)
    out = []
    for i, item in enumerate(value):
        if type(item) is not dict:
            raise f.wrong_type(f"contexts[{i}]", "object", item)
        get = item.get
        cid, url, text, score = get("id"), get("url"), get("text"), get("score")
        # hot path: check types inline, build the field path only for an error
        if not (
            (cid is None or type(cid) is str)
            and (url is None or type(url) is str)
            and (text is None or type(text) is str)
        ):
            for key in ("id", "url", "text"):
                f.opt_str(get(key), f"contexts[{i}].{key}")
        if score is not None and type(score) is not float:
            score = f.opt_number(score, f"contexts[{i}].score")
        elif score is not None and not math.isfinite(score):
            f.opt_number(score, f"contexts[{i}].score")
        out.append(ContextRecord(cid, url, text, score))
    return tuple(out)


def _relevance(value: Any) -> dict[str, int]:
    if type(value) is not dict:
        raise f.wrong_type("relevance", "object of document id to integer grade", value)
    for key, grade in value.items():
        if type(grade) is not int:
            path = f"relevance[{key[:64]!r}]"
            if type(grade) is bool:
                raise DecodeError(INVALID_VALUE, f"{path}: boolean is not an integer grade")
            raise f.wrong_type(path, "integer grade", grade)
    return dict(value)


def _judge(value: Any) -> JudgeRecord | None:
    if value is None:
        return None
    if type(value) is not dict:
        raise f.wrong_type("judge", "object or null", value)
    return JudgeRecord(
        decision=f.opt_bool(value.get("decision"), "judge.decision"),
        score=f.opt_number(value.get("score"), "judge.score"),
        model=f.opt_short_str(value.get("model"), "judge.model"),
        latency_ms=f.opt_number(value.get("latency_ms"), "judge.latency_ms"),
    )


def _cache(value: Any, key: str) -> Any:
    if value is None:
        return None
    if type(value) is not dict:
        raise f.wrong_type("cache", "object or null", value)
    if key == "hit":
        return f.opt_bool(value.get("hit"), "cache.hit")
    return f.opt_number(value.get("similarity"), "cache.similarity")


def _tags(value: Any) -> dict[str, str | int | float]:
    if type(value) is not dict:
        raise f.wrong_type("tags", "object of string to string or number", value)
    for key, tag in value.items():
        kind = type(tag)
        if kind is not str and kind is not int and kind is not float:
            raise f.wrong_type(f"tags[{key[:64]!r}]", "string or number", tag)
    return dict(value)
