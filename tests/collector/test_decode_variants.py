"""Realistic variants of the trace contract (tests/data/trace_variants.jsonl).

Each line is a trace shaped as real producers send them, with its expectation under
`_expect` (an unknown field, ignored by the decoder): the field warnings, the raw values
kept under `metadata._invalid`, and record fields after conversion. None of them is lost.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from collector.ingest.decode.trace_json import decode_json_message, parse_message
from collector.store.records import TraceRecord

CORPUS = Path(__file__).parent.parent / "data" / "trace_variants.jsonl"
LINES = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: v for k, v in dataclasses.asdict(value).items() if v is not None}
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, dict):
        return dict(value)
    return value


@pytest.mark.parametrize("line", LINES, ids=[line["_expect"]["case"] for line in LINES])
def test_every_realistic_variant_keeps_its_trace(line: dict[str, Any]) -> None:
    expect = line["_expect"]
    rec = parse_message(decode_json_message(json.dumps(line, ensure_ascii=False).encode()))
    assert isinstance(rec, TraceRecord)
    assert rec.question == line["question"]
    assert sorted(rec.field_warnings) == sorted(expect["warnings"])
    invalid = (rec.metadata or {}).get("_invalid", {})
    assert sorted(invalid) == sorted(expect.get("invalid", []))
    for path in invalid:
        assert path.split(".")[0].split("[")[0] in line  # the raw value, as sent
    for name, value in expect["record"].items():
        got = getattr(rec, name)
        if name == "contexts":
            got = [c.to_json() for c in got]
        assert _plain(got) == value, name
