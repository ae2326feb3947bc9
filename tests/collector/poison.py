"""The poison corpus: messages that once stopped ingestion for good (issue 13), each paired
with a good message that must still be stored after it.

Each poison is valid enough to pass a lenient decoder but breaks somewhere on the way to the
database (the JSON parser's recursion, a writer's nesting limit, a UTC conversion that
overflows, a NaN written as a literal). Decode limits may refuse some of them early; the
consumer's isolation must handle the rest, whatever exception they raise.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from collector.ingest.kafka.producer import OutgoingMessage
from ragpulse.demo.otlp import export_request, make_span
from tests.collector.traces import make_trace, trace_bytes, trace_id

AT = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Poison:
    name: str
    message: OutgoingMessage
    follower: OutgoingMessage
    follower_trace_id: str
    may_be_stored_as: str
    """The trace id under which the poison may legitimately be stored instead of refused (a
    decoder may map NaN to null, or keep an odd optional value aside): then it must be in
    `traces` and read back, else in `dead_letters` with a reason."""


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def json_trace_with_raw_metadata(i: int, metadata_json: str) -> bytes:
    """Trace `i` whose `metadata` is the given JSON text, spliced in unparsed."""
    trace = make_trace(i)
    trace["metadata"] = "@metadata@"
    return json.dumps(trace, ensure_ascii=False).replace('"@metadata@"', metadata_json).encode()


def json_trace_with(i: int, **fields: Any) -> bytes:
    trace = make_trace(i)
    trace.update(fields)
    return json.dumps(trace, ensure_ascii=False).encode()


def otlp_span_message(
    seed: int, topic: str, attributes: dict[str, Any], span: int = 0
) -> tuple[OutgoingMessage, str]:
    """One OTLP span of the trace whose id is derived from `seed` (`span` picks the span
    id, so several messages can carry different spans of one trace)."""
    rng = random.Random(seed)
    trace = rng.getrandbits(128).to_bytes(16, "big")
    span_id = (rng.getrandbits(62) + span + 1).to_bytes(8, "big")
    attrs = {"openinference.span.kind": "CHAIN", "input.value": f"Вопрос {seed}?"}
    attrs.update(attributes)
    value = export_request("poison-rag", [make_span(trace, span_id, None, "rag", AT, AT, attrs)])
    return OutgoingMessage(value, topic, b"otlp-poison"), trace.hex()


def _good_otlp(seed: int, topic: str) -> tuple[OutgoingMessage, str]:
    return otlp_span_message(seed, topic, {"output.value": "Ответ.", "session.id": "s1"})


def corpus(traces_topic: str, otlp_topic: str) -> list[Poison]:
    """Every poison of issue 13, JSON ones keyed to one partition of `traces_topic` and
    OTLP ones to one partition of `otlp_topic`, each followed by a good trace."""
    key = b"json-poison"
    out: list[Poison] = []
    json_poisons = {
        "metadata nested 10,000 deep": json_trace_with_raw_metadata(
            9001, '{"a": ' + nested(10_000) + "}"
        ),
        "metadata nested 300 deep": json_trace_with_raw_metadata(
            9002, '{"a": ' + nested(300) + "}"
        ),
        "metadata nested 1,000 deep": json_trace_with_raw_metadata(
            9003, '{"a": ' + nested(1000) + "}"
        ),
        "timestamp before year 1 in UTC": json_trace_with(
            9004, timestamp="0001-01-01T00:00:00+01:00"
        ),
        "timestamp after year 9999 in UTC": json_trace_with(
            9005, timestamp="9999-12-31T23:30:00-01:00"
        ),
    }
    for n, (name, value) in enumerate(json_poisons.items()):
        good = 100 + n
        out.append(
            Poison(
                name,
                OutgoingMessage(value, traces_topic, key),
                OutgoingMessage(trace_bytes(good), traces_topic, key),
                trace_id(good),
                trace_id(9001 + n),
            )
        )
    # (name, seed, attributes, whether a later span of the same trace follows)
    otlp_poisons: list[tuple[str, int, dict[str, Any], bool]] = [
        (
            "OTLP metadata attribute nested 600 deep",
            7001,
            {"metadata": '{"a":' + nested(600) + "}"},
            False,
        ),
        (
            "OTLP retrieval score NaN",
            7002,
            {
                "openinference.span.kind": "RETRIEVER",
                "retrieval.documents.0.document.id": "doc-1",
                "retrieval.documents.0.document.content": "Текст.",
                "retrieval.documents.0.document.score": float("nan"),
            },
            True,
        ),
        ("OTLP metadata attribute holding NaN", 7003, {"metadata": '{"score": NaN}'}, True),
    ]
    for n, (name, seed, attrs, later_span) in enumerate(otlp_poisons):
        message, poisoned_trace = otlp_span_message(seed, otlp_topic, attrs)
        follower, good_trace = _good_otlp(8000 + n, otlp_topic)
        out.append(Poison(name, message, follower, good_trace, poisoned_trace))
        if later_span:
            # A later span of the same trace: it must not stick behind what was stored first.
            later, _ = otlp_span_message(seed, otlp_topic, {"output.value": "Позже."}, span=1)
            follower2, good2 = _good_otlp(8100 + n, otlp_topic)
            out.append(Poison(f"{name}, later span", later, follower2, good2, poisoned_trace))
    return out
