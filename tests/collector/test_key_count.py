"""Counting the keys of JSON text (the duplicate-key check) without the per-key loop.

`limits._keys_in_text` counts every `"` followed by `:` and takes back the escaped ones;
it must agree with the loop over every candidate it replaced, for texts full of escaped
quotes, backslash runs, colons and JSON inside strings, written compact, spaced and
indented; and with the decoded objects' key count (what the check compares it with) when
no string starts with `:`. (Both counts take the opening quote of a string that starts
with `:`, such as ":authority", for the end of a key; the count is only a filter, and a
mismatch is settled by parsing again, so such a message is not refused:
`test_a_value_starting_with_a_colon_is_no_duplicate_key`.)
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

import orjson

from collector.ingest.decode.limits import DEFAULT_MAX_DEPTH, _keys_in_text, census

_KEY_END = re.compile(rb'"[ \t\r\n]*:')
_PIECES = ['"', "\\", ":", '":', '\\":', "\\\\", " ", "\n", "\t", "a", "é", "{", "}", "'"]


def _replaced(raw: bytes) -> int:
    """The count as it was: each candidate's preceding backslashes looked at."""
    keys = 0
    for match in _KEY_END.finditer(raw):
        quote = match.start()
        start = quote
        while start and raw[start - 1] == 0x5C:
            start -= 1
        keys += not (quote - start) & 1
    return keys


def _text(rng: random.Random, lead: str) -> str:
    return lead + "".join(rng.choice(_PIECES) for _ in range(rng.randrange(12)))


def _value(rng: random.Random, lead: str, depth: int = 0) -> Any:
    kind = rng.randrange(6 if depth < 3 else 3)
    if kind == 0:
        return _text(rng, lead)
    if kind == 1:
        return json.dumps({_text(rng, lead): _text(rng, lead)})  # JSON inside a string
    if kind == 2:
        return rng.choice([1, 2.5, None, True])
    if kind == 3:
        return [_value(rng, lead, depth + 1) for _ in range(rng.randrange(3))]
    return {
        _text(rng, lead) + str(i): _value(rng, lead, depth + 1) for i in range(rng.randrange(4))
    }


def test_key_count_matches_the_objects_and_the_replaced_loop() -> None:
    rng = random.Random(28)
    writers = [
        orjson.dumps,
        lambda o: json.dumps(o).encode(),
        lambda o: json.dumps(o, ensure_ascii=False, indent=2).encode(),
        lambda o: json.dumps(o, separators=(",", " :\t")).encode(),
        lambda o: json.dumps(o, separators=(",", "\r\n:")).encode(),
        lambda o: json.dumps(o, separators=(",", "\n:")).encode(),
        lambda o: json.dumps(o, separators=(",", "\t:")).encode(),
    ]
    escaped = 0
    for n in range(2000):
        lead = "a" if n % 2 else ""  # "": strings may start with ':'
        obj = {f"k{i}": _value(rng, lead) for i in range(rng.randrange(1, 5))}
        raw = rng.choice(writers)(obj)
        assert _keys_in_text(raw) == _replaced(raw), raw
        if lead:
            assert _keys_in_text(raw) == census(obj, DEFAULT_MAX_DEPTH)[1], raw
        escaped += b'\\":' in raw
    assert escaped > 200  # the escaped candidates were exercised


def test_backslash_runs_before_a_key_end() -> None:
    for run in range(6):
        obj = {"a" + "\\" * run: "x" + "\\" * run + '":', "b": {"c" + "\\" * run: '\\":'}}
        for raw in (orjson.dumps(obj), json.dumps(obj, indent=1).encode()):
            assert _keys_in_text(raw) == _replaced(raw) == 3, raw


def test_a_value_starting_with_a_colon_is_no_duplicate_key() -> None:
    from collector.ingest.decode.errors import DecodeError
    from collector.ingest.decode.limits import check_structure

    # an HTTP/2 pseudo-header as a value, beside a string with an escaped quote
    raw = b'{"method": ":authority", "q": "say \\"hi\\""}'
    check_structure(raw, orjson.loads(raw))  # accepted
    twice = b'{"method": ":authority", "q": "say \\"hi\\"", "q": "again"}'
    try:
        check_structure(twice, orjson.loads(twice))
    except DecodeError as exc:
        assert "'q' appears twice" in str(exc)
    else:
        raise AssertionError("a repeated key was accepted")
