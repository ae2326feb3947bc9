"""Poison and misfits through the real ingest path, on SQLite and PostgreSQL.

JSON messages that must be refused (too deep, duplicate keys, timestamps overflowing UTC)
become dead letters with their reason while the good traces around them are stored; OTLP
spans with NaN doubles and deep JSON attributes are stored without them, and a later
fragment of the same trace still merges; the realistic-variants corpus is stored whole
with its field warnings counted.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from collector.ingest.kafka.stats import ConsumerStats
from collector.ingest.pipeline import Ingestor, RawMessage
from collector.settings import load_settings
from collector.store.models import DeadLetter, Trace
from collector.store.session import make_engine, make_session_factory
from tests.collector.otlp_traces import json_message, proto_message, rag_spans, trace_hex
from tests.collector.traces import make_trace

CORPUS = Path(__file__).parent.parent / "data" / "trace_variants.jsonl"


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    eng = make_engine(db_url)
    yield eng
    eng.dispose()


@pytest.fixture
def sessions(engine: Engine) -> sessionmaker[Session]:
    return make_session_factory(engine)


def _ingest(sessions: sessionmaker[Session], messages: list[RawMessage]) -> Any:
    ingestor = Ingestor(load_settings(sampling={"real_users_benchmark": 1.0, "judge": 1.0}))
    with sessions() as session:
        result = ingestor.ingest_batch(session, messages)
        session.commit()
    return result


def _msg(offset: int, value: bytes, topic: str = "rag.traces") -> RawMessage:
    return RawMessage(topic=topic, partition=0, offset=offset, key=None, value=value)


def _good(i: int) -> bytes:
    return json.dumps(make_trace(i), ensure_ascii=False).encode()


def _deep_metadata(i: int, depth: int) -> bytes:
    trace = make_trace(i)
    del trace["metadata"]
    head = json.dumps(trace, ensure_ascii=False)[:-1]
    return (head + ', "metadata": ' + '{"a": ' * depth + "1" + "}" * depth + "}").encode()


def test_poison_json_is_dead_lettered_and_good_traces_around_it_are_stored(
    sessions: sessionmaker[Session],
) -> None:
    poison = {
        100: (_deep_metadata(100, 10_000), "too_deep"),
        102: (_deep_metadata(102, 300), "too_deep"),
        104: (
            b'{"trace_id": "dup", "trace_id": "dup2", "timestamp": "2026-01-01T00:00:00Z", '
            b'"question": "q"}',
            "duplicate_key",
        ),
        106: (
            json.dumps(make_trace(106) | {"timestamp": "0001-01-01T00:00:00+01:00"}).encode(),
            "invalid_value",
        ),
        108: (
            json.dumps(make_trace(108) | {"timestamp": "9999-12-31T23:30:00-01:00"}).encode(),
            "invalid_value",
        ),
    }
    messages = []
    for offset, (value, _) in poison.items():
        messages.append(_msg(offset, value))
        messages.append(_msg(offset + 1, _good(offset + 1)))
    # an integer beyond a 32-bit column in an optional field costs nothing but that field
    messages.append(_msg(200, json.dumps(make_trace(200) | {"turn": 2**40}).encode()))
    result = _ingest(sessions, messages)
    assert result.invalid == len(poison)
    assert result.stored == len(poison) + 1
    assert result.field_warnings == {"turn": 1}
    with sessions() as session:
        letters = {d.offset: d for d in session.scalars(select(DeadLetter))}
        stored = {t.trace_id: t for t in session.scalars(select(Trace))}
    assert {o: d.reason for o, d in letters.items()} == {o: r for o, (_, r) in poison.items()}
    assert all(letters[o].raw == v for o, (v, _) in poison.items())
    assert "UTC" in letters[106].detail and "limit of 64" in letters[102].detail
    assert {f"trace-{o + 1:08d}" for o in poison} < set(stored)
    big_turn = stored["trace-00000200"]
    assert big_turn.turn is None and big_turn.meta is not None
    assert big_turn.meta["_invalid"] == {"turn": 2**40}


def test_realistic_variants_are_all_stored_with_warnings_counted(
    sessions: sessionmaker[Session],
) -> None:
    lines = CORPUS.read_bytes().splitlines()
    result = _ingest(sessions, [_msg(i, line) for i, line in enumerate(lines)])
    assert (result.stored, result.invalid) == (len(lines), 0)
    expected = Counter(w for line in lines for w in json.loads(line)["_expect"]["warnings"])
    assert result.field_warnings == dict(expected)
    stats = ConsumerStats(CollectorRegistry())
    stats.record(result)
    for name, count in expected.items():
        value = stats.registry.get_sample_value(
            "ragpulse_traces_field_warnings_total", {"field": name}
        )
        assert value == count
    with sessions() as session:
        rows = {t.trace_id: t for t in session.scalars(select(Trace))}
    by_case = {json.loads(line)["_expect"]["case"]: json.loads(line)["trace_id"] for line in lines}
    stages = rows[by_case["per-stage latencies"]]
    assert stages.latency_ms == 3141.0
    assert stages.latency_stages == {"retrieval": 172.0, "generation": 2969.0}
    shown = rows[by_case["shown_url list with an empty value"]]
    assert shown.shown_url == ["https://wiki.example.com/a", "https://wiki.example.com/b"]
    answer = rows[by_case["answer as a LangChain output object"]]
    assert answer.answer is None and answer.meta is not None
    assert answer.meta["_invalid"]["answer"]["output"] == "Через госуслуги."
    usage = rows[by_case["GenAI usage names"]].usage
    assert usage is not None and usage["prompt_tokens"] == 812


def test_otlp_nan_doubles_and_deep_json_attributes_never_stick_a_trace(
    sessions: sessionmaker[Session],
) -> None:
    deep = '{"a": ' * 10_000 + "1" + "}" * 10_000
    spans = rag_spans(
        root_attributes={
            "metadata": deep,
            "ragpulse.tag.weight": float("nan"),
            "ragpulse.shown_url": ["https://kb.example.org/doc-2"],
        },
        scores=[float("nan"), float("inf"), 0.5],
    )
    root, retriever, llm = spans
    first = _ingest(sessions, [_msg(0, proto_message([retriever]), "otlp_spans")])
    second = _ingest(sessions, [_msg(1, json_message([root]), "otlp_spans")])
    third = _ingest(sessions, [_msg(2, proto_message([llm]), "otlp_spans")])
    assert (first.invalid, second.invalid, third.invalid) == (0, 0, 0)
    assert first.field_warnings == {"contexts": 2}
    assert second.field_warnings == {"metadata": 1, "tags": 1}
    with sessions() as session:
        trace = session.scalars(select(Trace).where(Trace.trace_id == trace_hex(spans))).one()
    assert trace.contexts is not None
    assert [c.get("score") for c in trace.contexts] == [None, None, 0.5]
    assert trace.shown_url == ["https://kb.example.org/doc-2"]
    assert trace.model == "gpt-4o-mini"  # the last fragment merged
    assert trace.meta is not None and trace.meta["_invalid"]["metadata"] == deep
    assert trace.meta["_invalid"]["tags.weight"] == "nan"
    assert trace.tags is not None and "weight" not in trace.tags


def test_a_non_finite_float_in_any_json_column_is_stored_as_null(
    sessions: sessionmaker[Session],
) -> None:
    with sessions() as session:
        session.add(
            Trace(
                trace_id="nan-json",
                timestamp=datetime.now(UTC),
                question="q",
                meta={"x": float("nan"), "y": [float("inf"), 1.5]},
                usage={"cost_usd": float("-inf")},
            )
        )
        session.commit()
    with sessions() as session:
        row = session.scalars(select(Trace).where(Trace.trace_id == "nan-json")).one()
    assert row.meta == {"x": None, "y": [None, 1.5]}
    assert row.usage == {"cost_usd": None}
    assert not any(isinstance(v, float) and math.isnan(v) for v in row.meta.values())
