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
    depth, keys = walk(obj, max_depth)
    if depth > max_depth:
        raise DecodeError(TOO_DEEP, f"nesting depth exceeds the limit of {max_depth}")
    if keys != _keys_in_text(raw):
        raise DecodeError(DUPLICATE_KEY, _first_duplicate(raw))


def walk(obj: Any, max_depth: int) -> tuple[int, int]:
    """(depth, number of object keys) of a decoded value; stops once past `max_depth`."""
    if type(obj) is not dict and type(obj) is not list:
        return 0, 0
    deepest = 0
    keys = 0
    stack: list[tuple[Any, int]] = [(obj, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        value, depth = pop()
        if depth > deepest:
            deepest = depth
            if depth > max_depth:
                return depth, keys
        if type(value) is dict:
            keys += len(value)
            for item in value.values():
                if type(item) is dict or type(item) is list:
                    push((item, depth + 1))
        else:
            for item in value:
                if type(item) is dict or type(item) is list:
                    push((item, depth + 1))
    return deepest, keys


def depth_within(value: Any, max_depth: int) -> bool:
    """True when a decoded value nests at most `max_depth` levels."""
    if type(value) is not dict and type(value) is not list:
        return True
    return walk(value, max_depth)[0] <= max_depth


def _keys_in_text(raw: bytes) -> int:
    """Keys in valid JSON text: each `"` followed by `:` ends a key, unless an odd number of
    backslashes escapes it (`\\":` inside a string; `\\\\":` does end a key). Patterns that
    start with a literal let the regex engine jump between candidates."""
    count = len(_KEY_END.findall(raw))
    if b"\\" not in raw or not _ESCAPED_KEY_END.search(raw):
        return count
    keys = 0
    for match in _KEY_END.finditer(raw):
        quote = match.start()
        start = quote
        while start and raw[start - 1] == 0x5C:  # backslash
            start -= 1
        keys += not (quote - start) & 1
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


def _first_duplicate(raw: bytes) -> str:
    """The detail naming the first repeated key (the text is valid JSON of a safe depth)."""
    try:
        json.loads(raw, object_pairs_hook=_pairs)
    except _Duplicate as dup:
        return f"key {dup.key[:64]!r} appears twice in one object"
    except (ValueError, RecursionError):
        pass
    return "an object repeats a key"
