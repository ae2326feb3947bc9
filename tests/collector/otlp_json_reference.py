"""The OTLP/JSON decode before issue 28's direct reader, kept as the reference it must match.

`reference(message)`: protobuf's `ParseDict` into an `ExportTraceServiceRequest` (after the
hex-id rewrite), then the protobuf walk (`parse_otlp_request` + `fragments_from_request`,
which the inspect command still uses). `direct(message)`: the reader of the parsed dict
(`json_spans`) and the shared fragment builder, or `UNUSUAL` when the reader leaves the
message to `ParseDict`. Outcomes are compared as `repr` text (fragments, or the refusal's
reason, or an exception's type), so a NaN attribute equals a NaN attribute.
"""

from __future__ import annotations

from collections.abc import Callable

from collector.ingest.decode.errors import DecodeError
from collector.ingest.decode.limits import DEFAULT_MAX_DEPTH
from collector.ingest.decode.otlp import (
    decode_otlp_message,
    fragments_from_request,
    fragments_from_spans,
    parse_otlp_request,
)
from collector.ingest.decode.otlp_json import Unusual, json_spans
from collector.ingest.decode.trace_json import decode_json_message

MAX_BYTES = 64 * 1024 * 1024
UNUSUAL = "Unusual: left to ParseDict"


def _outcome(fn: Callable[[], object]) -> str:
    try:
        return repr(fn())
    except DecodeError as exc:
        return f"DecodeError({exc.reason})"
    except Exception as exc:  # the old path let some ValueErrors through; so must the new
        return f"{type(exc).__name__}"


def reference(message: bytes, max_depth: int = DEFAULT_MAX_DEPTH) -> str:
    """What the message decoded to (or why it was refused) through `ParseDict`."""
    return _outcome(
        lambda: fragments_from_request(
            parse_otlp_request(message, "otlp_json", MAX_BYTES, max_depth), max_depth
        )
    )


def direct(message: bytes, max_depth: int = DEFAULT_MAX_DEPTH) -> str:
    """What the direct reader makes of the message, or `UNUSUAL`."""
    try:
        obj = decode_json_message(message, MAX_BYTES, max_depth)
    except DecodeError as exc:
        return f"DecodeError({exc.reason})"
    try:
        views = json_spans(obj)
    except Unusual:
        return UNUSUAL
    return _outcome(lambda: fragments_from_spans(views, max_depth))


def decoded(message: bytes, max_depth: int = DEFAULT_MAX_DEPTH) -> str:
    """What the consumer's decode (direct reader, `ParseDict` for the unusual) gives."""
    return _outcome(lambda: decode_otlp_message(message, "otlp_json", MAX_BYTES, max_depth))


def check_same(message: bytes, *, direct_read: bool, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
    """The consumer's decode equals the reference; with `direct_read`, the direct reader
    read the message itself (no fallback), else it read it or left it to `ParseDict`."""
    expected = reference(message, max_depth)
    seen = direct(message, max_depth)
    if direct_read:
        assert seen != UNUSUAL, message[:2000]
    if seen != UNUSUAL:
        assert seen == expected, message[:2000]
    assert decoded(message, max_depth) == expected, message[:2000]
