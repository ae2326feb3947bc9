"""Any JSON value in any optional field keeps the trace, and what is stored is valid JSON.

A seeded generator puts random JSON (scalars, strings of digits, huge and negative numbers,
nested lists and objects) into every optional field and into the fields of contexts,
judge, cache, usage and latency stages; the record must decode, and every stored value
must encode as strict JSON (no NaN/Infinity) within the depth limit.
"""

from __future__ import annotations

import json
import random
from typing import Any

from collector.ingest.decode.limits import DEFAULT_MAX_DEPTH, walk
from collector.ingest.decode.trace_json import decode_json_message, parse_trace_record
from collector.store.records import TraceRecord
from collector.store.repository import trace_row
from collector.store.session import dumps_json

OPTIONAL = (
    "answer", "contexts", "session_id", "user_id", "turn", "reference", "relevant_ids",
    "relevance", "judge", "judge_label", "cache", "model", "usage", "latency_ms", "tags",
    "metadata", "shown_url",
)  # fmt: skip
NESTED = {
    "contexts": ("id", "url", "text", "score"),
    "judge": ("decision", "score", "model", "latency_ms"),
    "cache": ("hit", "similarity"),
    "usage": ("prompt_tokens", "input_tokens", "cost_usd", "total_tokens"),
    "latency_ms": ("retrieval", "generation", "total"),
}


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(12 if depth < 4 else 9)
    return [
        lambda: None,
        lambda: rng.choice([True, False]),
        lambda: rng.randint(-(2**63), 2**64 - 1),
        lambda: rng.choice([0, 1, -1, 2**31, 2**31 - 1, 2**53 + 1]),
        lambda: rng.uniform(-1e307, 1e307),
        lambda: rng.choice(["", "2", "-3", "0.5", "1e999", "nan", "true", "x" * 300]),
        lambda: rng.choice(["https://a.example/b", "Вопрос", " ", "\\N", "\t"]),
        lambda: 1.7e308,
        lambda: rng.random(),
        lambda: [_value(rng, depth + 1) for _ in range(rng.randrange(4))],
        lambda: {str(i): _value(rng, depth + 1) for i in range(rng.randrange(4))},
        lambda: {k: _value(rng, depth + 1) for k in rng.sample(sum(NESTED.values(), ()), 3)},
    ][kind]()


def _trace(rng: random.Random, i: int) -> dict[str, Any]:
    trace: dict[str, Any] = {
        "trace_id": f"fuzz-{i}",
        "timestamp": "2026-11-23T10:00:00+03:00",
        "question": "Вопрос?",
    }
    for name in rng.sample(OPTIONAL, rng.randrange(1, len(OPTIONAL))):
        if name in NESTED and rng.random() < 0.6:
            inner = {k: _value(rng, 1) for k in NESTED[name] if rng.random() < 0.7}
            trace[name] = [inner, _value(rng, 1)] if name == "contexts" else inner
        else:
            trace[name] = _value(rng)
    return trace


def test_random_optional_values_never_cost_a_trace_and_store_as_strict_json() -> None:
    rng = random.Random(20261123)
    warned = 0
    for i in range(3000):
        raw = json.dumps(_trace(rng, i), ensure_ascii=False).encode()
        rec = parse_trace_record(decode_json_message(raw))
        assert isinstance(rec, TraceRecord)
        warned += bool(rec.field_warnings)
        row = trace_row(rec, rec.timestamp)
        for column, value in row.items():
            if isinstance(value, dict | list):
                json.loads(dumps_json(value))  # strict: NaN/Infinity would not parse back
                json.dumps(value, allow_nan=False)
                assert walk(value, DEFAULT_MAX_DEPTH)[0] <= DEFAULT_MAX_DEPTH, column
            elif isinstance(value, float):
                assert value == value and abs(value) != float("inf"), column
        if rec.turn is not None:
            assert 0 <= rec.turn < 2**31
    assert warned > 1000  # the generator does produce misfits
