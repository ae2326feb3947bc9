"""Structural limits of a decoded JSON document: nesting depth and duplicate object keys.

Depth: a message nested deeper than `max_depth` (the top-level object is depth 1) is
refused. Everything ragpulse stores is re-encoded later (orjson writes only to depth 254,
the standard library's `json.dumps` and PostgreSQL's parser recurse), and a stored span
summary nests a message's metadata two levels deeper; a limit far below all of them (64 by
default, as .NET's System.Text.Json) keeps every writer and reader safe, while real traces
nest under 10 levels. The walk is iterative: no depth can raise `RecursionError` here.

Duplicate keys: RFC 8259 leaves their meaning open (orjson keeps the last value, other
readers the first), so a message with `{"trace_id": "a", "trace_id": "b"}` means different
things to different readers; it is refused, naming the key. Detection is cheap: the keys in
the text are counted (a key is the only string followed by `:`, and a quote inside a string
is always escaped) and compared with the keys of the decoded objects; only when they differ
is the message parsed again, keeping pairs, to name the first duplicate.

Counting is the hot path of ingestion (one pass per 8 KB message), so a message without any
backslash, the usual case, takes a cheaper route: every `"` in it then delimits a string,
so the text has exactly two per key and per string value, and comparing `raw.count(b'"')`
(a single-byte count in C) with the decoded keys and strings says the same as counting
keys with the regex, in about half the time.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from collector.ingest.decode.errors import DUPLICATE_KEY, TOO_DEEP, DecodeError

DEFAULT_MAX_DEPTH: Final = 64

_KEY_END = re.compile(rb'"[ \t\r\n]*:')
_ESCAPED_KEY_END = re.compile(rb'\\"[ \t\r\n]*:')


def check_structure(raw: bytes, obj: Any, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
    """Raise `DecodeError` when `obj` (decoded from `raw`) is too deep or repeats a key."""
    depth, keys, strings = census(obj, max_depth)
    if depth > max_depth:
        raise DecodeError(TOO_DEEP, f"nesting depth exceeds the limit of {max_depth}")
    if b"\\" not in raw:  # no escapes: each quote opens or closes a key or a string value
        unique = raw.count(b'"') == 2 * (keys + strings)
    else:
        unique = keys == _keys_in_text(raw)
    if not unique:
        # The count is a fast filter: a string value that starts with ":" after an escaped
        # character elsewhere (`"method": ":authority"` beside `"q": "a \"b\""`) looks
        # like one more key end. The exact check parses again, keeping pairs.
        found = _first_duplicate(raw)
        if found is not None:
            raise DecodeError(DUPLICATE_KEY, found)


def walk(obj: Any, max_depth: int) -> tuple[int, int]:
    """(depth, number of object keys) of a decoded value; stops once past `max_depth`."""
    depth, keys, _ = census(obj, max_depth)
    return depth, keys


def census(obj: Any, max_depth: int) -> tuple[int, int, int]:
    """(depth, object keys, string values) of a decoded value, one nesting level at a time;
    stops once past `max_depth`. String values are those in objects and arrays (keys are
    counted apart, a bare string is depth 0)."""
    if type(obj) is not dict and type(obj) is not list:
        return 0, 0, 0
    depth = keys = strings = 0
    level: list[Any] = [obj]
    while level:
        depth += 1
        if depth > max_depth:
            break
        below: list[Any] = []
        push = below.append
        for container in level:
            items = container
            if type(container) is dict:
                keys += len(container)
                items = container.values()
            for item in items:
                kind = type(item)
                if kind is str:
                    strings += 1
                elif kind is dict or kind is list:
                    push(item)
        level = below
    return depth, keys, strings


def depth_within(value: Any, max_depth: int) -> bool:
    """True when a decoded value nests at most `max_depth` levels."""
    if type(value) is not dict and type(value) is not list:
        return True
    return walk(value, max_depth)[0] <= max_depth


def _keys_in_text(raw: bytes) -> int:
    """Keys in valid JSON text: each `"` followed by `:` ends a key, unless an odd number of
    backslashes escapes it (`\\":` inside a string; `\\\\":` does end a key).

    Every candidate is counted, then the escaped ones are taken back: only those need their
    backslashes looked at, and they are few (JSON text inside string values, as in OTLP
    `input.value`). Patterns that start with a literal let the regex engine jump between
    candidates."""
    keys = len(_KEY_END.findall(raw))
    if b'\\"' not in raw:
        return keys
    for match in _ESCAPED_KEY_END.finditer(raw):
        quote = match.start() + 1
        start = quote
        while start and raw[start - 1] == 0x5C:  # backslash
            start -= 1
        keys -= (quote - start) & 1
    return keys


class _Duplicate(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Duplicate(key)
        out[key] = value
    return out


def _first_duplicate(raw: bytes) -> str | None:
    """The detail naming the first repeated key, or None when no object repeats one (the
    text is valid JSON of a safe depth)."""
    try:
        json.loads(raw, object_pairs_hook=_pairs)
    except _Duplicate as dup:
        return f"key {dup.key[:64]!r} appears twice in one object"
    except (ValueError, RecursionError):
        return "an object repeats a key"
    return None
