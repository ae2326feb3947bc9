"""Idempotent storage through `Ingestor.ingest_batch`, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from sqlalchemy import Engine, select, text
from sqlalchemy.orm import Session, sessionmaker

from collector.ingest.pipeline import BatchResult, Ingestor, RawMessage
from collector.settings import load_settings
from collector.store.models import Trace
from collector.store.samples import trace_to_sample
from collector.store.session import make_engine, make_session_factory
from tests.collector.otlp_traces import ANSWER, QUESTION, proto_message, rag_spans, trace_hex
from tests.collector.traces import make_feedback, make_trace, trace_bytes, trace_id

TOPIC, FEEDBACK, OTLP = "rag.traces", "rag.feedback", "otlp_spans"


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    eng = make_engine(db_url)
    yield eng
    eng.dispose()


@pytest.fixture
def sessions(engine: Engine) -> sessionmaker[Session]:
    return make_session_factory(engine)


def ingestor(**sampling: Any) -> Ingestor:
    return Ingestor(load_settings(sampling=sampling or {"real_users_benchmark": 1.0, "judge": 1.0}))


def ingest(
    sessions: sessionmaker[Session], messages: Sequence[RawMessage], ing: Ingestor | None = None
) -> BatchResult:
    with sessions() as session:
        result = (ing or ingestor()).ingest_batch(session, messages)
        session.commit()
    return result


def msg(topic: str, offset: int, value: bytes | None, key: bytes | None = None) -> RawMessage:
    return RawMessage(topic=topic, partition=0, offset=offset, key=key, value=value)


def fb(i: int, offset: int, **fields: Any) -> RawMessage:
    return msg(
        FEEDBACK, offset, json.dumps(make_feedback(i, **fields), ensure_ascii=False).encode()
    )


def snapshot(engine: Engine, volatile: Sequence[str] = ()) -> dict[str, list[dict[str, Any]]]:
    """Every row of the ingest tables, in key order, minus surrogate ids and `volatile` columns."""
    order = {
        "traces": "trace_id",
        "feedback": "event_hash",
        "dead_letters": 'topic, partition, "offset"',
        "samples": "trace_id, purpose",
    }
    out = {}
    with engine.connect() as conn:
        for table, key in order.items():
            rows = conn.execute(text(f"SELECT * FROM {table} ORDER BY {key}")).mappings()
            out[table] = [
                {k: v for k, v in row.items() if k != "id" and k not in volatile} for row in rows
            ]
    return out


def stored(sessions: sessionmaker[Session], tid: str) -> Trace:
    with sessions() as session:
        row = session.execute(select(Trace).where(Trace.trace_id == tid)).scalar_one()
        session.expunge(row)
        return row


def test_duplicates_are_stored_once_and_counted(
    sessions: sessionmaker[Session], engine: Engine
) -> None:
    batch = [msg(TOPIC, i, trace_bytes(i % 5)) for i in range(8)]  # 5 distinct, 3 repeats
    first = ingest(sessions, batch)
    assert (first.consumed, first.stored, first.duplicates, first.invalid) == (8, 5, 3, 0)
    assert first.consumed_by_topic == {TOPIC: 8}
    second = ingest(sessions, [msg(TOPIC, 100, trace_bytes(2)), msg(TOPIC, 101, trace_bytes(9))])
    assert (second.stored, second.duplicates) == (1, 1)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM traces")).scalar() == 6


def test_stored_trace_maps_back_to_the_sample(sessions: sessionmaker[Session]) -> None:
    ingest(sessions, [msg(TOPIC, 0, trace_bytes(4, "ru", size_bytes=6000))])
    raw = make_trace(4, "ru", 6000)
    sample = trace_to_sample(stored(sessions, trace_id(4)))
    assert sample.question == raw["question"] and sample.answer == raw["answer"]
    assert [c.text for c in sample.contexts] == [c["text"] for c in raw["contexts"]]
    assert sample.relevance == {raw["relevant_ids"][0]: 1}
    assert sample.tags == {"tenant": "globex", "lang": "ru"}
    assert sample.timestamp is not None and sample.timestamp.tzinfo is not None
    assert sample.judge is not None and sample.judge.decision is True


def test_dead_letters_keep_raw_bytes_and_position(
    sessions: sessionmaker[Session], engine: Engine
) -> None:
    bad = b'{"trace_id": "x", \xff}'
    batch = [
        msg(TOPIC, 7, bad, key=b"k1"),
        msg(TOPIC, 8, None),
        msg(TOPIC, 9, b'{"trace_id": "x"}'),
        msg(OTLP, 3, b"\x0a\xff\xff\xff\xff\x0f"),
    ]
    result = ingest(sessions, batch)
    assert result.invalid == 4
    assert result.invalid_by_reason == {
        "not_utf8": 1,
        "empty": 1,
        "missing_field": 1,
        "invalid_otlp": 1,
    }
    before = snapshot(engine)
    letters = {(d["topic"], d["offset"]): d for d in before["dead_letters"]}
    assert bytes(letters[(TOPIC, 7)]["raw"]) == bad
    assert bytes(letters[(TOPIC, 7)]["key"]) == b"k1"
    assert letters[(TOPIC, 7)]["detail"].startswith("invalid UTF-8 at byte offset 18")
    assert bytes(letters[(TOPIC, 8)]["raw"]) == b""
    assert letters[(TOPIC, 9)]["detail"] == "timestamp: required field is missing"
    assert letters[(TOPIC, 7)]["partition"] == 0
    replay = ingest(sessions, batch)
    assert replay.invalid == 4
    assert snapshot(engine) == before


def test_feedback_before_and_after_its_trace(sessions: sessionmaker[Session]) -> None:
    # feedback for trace 1 arrives first; trace 2's feedback after the trace
    early = ingest(sessions, [fb(1, 0, judge_label=False, relevant_ids=["doc-x"], rating=2)])
    assert early.feedback == 1 and early.stored == 0
    ingest(sessions, [msg(TOPIC, 0, trace_bytes(1)), msg(TOPIC, 1, trace_bytes(2, answer=False))])
    one = stored(sessions, trace_id(1))
    assert (one.judge_label, one.relevant_ids, one.feedback_rating) == (False, ["doc-x"], 2.0)
    late = ingest(sessions, [fb(2, 1, judge_label=True, comment="Спасибо")])
    assert late.feedback == 1
    two = stored(sessions, trace_id(2))
    assert (two.judge_label, two.feedback_comment) == (True, "Спасибо")
    assert two.updated_at >= two.received_at
    with sessions() as session:
        pending = session.execute(text("SELECT count(*) FROM feedback WHERE NOT applied")).scalar()
    assert pending == 0


def test_feedback_order_and_replay_do_not_change_the_result(
    sessions: sessionmaker[Session], engine: Engine
) -> None:
    older = fb(3, 0, seconds_after=10, judge_label=False, rating=1)
    newer = fb(3, 1, seconds_after=20, judge_label=True)
    ingest(sessions, [msg(TOPIC, 0, trace_bytes(3))])
    ingest(sessions, [newer])
    ingest(sessions, [older])  # arrives late but is older: must not win
    row = stored(sessions, trace_id(3))
    assert (row.judge_label, row.feedback_rating) == (True, 1.0)
    before = snapshot(engine)
    replay = ingest(sessions, [older, newer])
    assert (replay.feedback, replay.duplicates) == (0, 2)
    assert snapshot(engine) == before


def test_ground_truth_by_feedback_makes_a_trace_eligible(sessions: sessionmaker[Session]) -> None:
    first = ingest(sessions, [msg(TOPIC, 0, trace_bytes(5, ground_truth=False))])
    assert first.sampled_by_purpose == {"judge": 1}
    later = ingest(sessions, [fb(5, 0, relevant_ids=["doc-1"])])
    assert later.sampled_by_purpose == {"real_users_benchmark": 1}
    assert ingest(sessions, [fb(5, 0, relevant_ids=["doc-1"])]).sampled == 0


def test_replaying_a_whole_mixed_batch_changes_nothing(
    sessions: sessionmaker[Session], engine: Engine
) -> None:
    spans = rag_spans()
    batch = [msg(TOPIC, i, trace_bytes(i, "en" if i % 2 else "ru")) for i in range(20)]
    batch += [fb(i, i) for i in range(0, 25, 3)]
    batch += [msg(TOPIC, 20, b"{oops"), msg(OTLP, 0, proto_message(spans))]
    first = ingest(sessions, batch)
    assert (first.stored, first.invalid) == (21, 1)
    before = snapshot(engine)
    replay = ingest(sessions, batch)
    assert (replay.stored, replay.sampled, replay.feedback) == (0, 0, 0)
    assert replay.duplicates == 21 + 9
    assert snapshot(engine) == before


@pytest.mark.parametrize("order", ["root_last", "root_first", "one_message"])
def test_otlp_fragments_in_any_order_equal_all_at_once(
    sessions: sessionmaker[Session], engine: Engine, order: str
) -> None:
    spans = rag_spans()
    tid = trace_hex(spans)
    ingest(sessions, [fb(0, 0, relevant_ids=["doc-2"])])  # unrelated trace, stays pending
    ingest(
        sessions,
        [msg(FEEDBACK, 1, json.dumps(make_feedback(0) | {"trace_id": tid}).encode())],
    )
    if order == "one_message":
        parts = [[spans[0], spans[1], spans[2]]]
    elif order == "root_last":
        parts = [[spans[2]], [spans[1]], [spans[0]]]
    else:
        parts = [[spans[0]], [spans[2], spans[1]]]
    total = BatchResult()
    for k, part in enumerate(parts):
        total.add(ingest(sessions, [msg(OTLP, k, proto_message(part))]))
    assert total.stored == len(parts)
    row = stored(sessions, tid)
    assert (row.question, row.answer, row.source) == (QUESTION, ANSWER, "otlp")
    assert [c["id"] for c in row.contexts or []] == ["doc-1", "doc-2", "doc-3"]
    assert row.usage == {"prompt_tokens": 900, "completion_tokens": 120, "total_tokens": 1020}
    assert row.judge_label is True  # feedback that arrived before any span
    assert row.latency_ms is not None and len(row.spans or {}) == 3
    # a replay of every part, in reverse, changes nothing
    before = snapshot(engine)
    replay = BatchResult()
    for k, part in reversed(list(enumerate(parts))):
        replay.add(ingest(sessions, [msg(OTLP, k, proto_message(part))]))
    assert (replay.stored, replay.duplicates) == (0, len(parts))
    assert snapshot(engine) == before


def test_otlp_result_is_independent_of_arrival_order(
    db_url: str, request: pytest.FixtureRequest
) -> None:
    """Two databases fed the same fragments in opposite orders hold the same trace."""
    from tests.fixtures.db import create_postgres_database, drop_postgres_database

    spans = rag_spans()
    parts = [proto_message([s]) for s in spans]
    results: list[dict[str, list[dict[str, Any]]]] = []
    for sequence in (parts, list(reversed(parts))):
        if db_url.startswith("sqlite"):  # freshly migrated: copies of the migrated template
            url = db_url.replace("ragpulse.db", f"order{len(results)}.db")
            shutil.copyfile(request.getfixturevalue("sqlite_template"), url.split(":///", 1)[1])
        else:
            url = create_postgres_database(template=request.getfixturevalue("postgres_template"))
        eng = make_engine(url)
        try:
            factory = make_session_factory(eng)
            for k, value in enumerate(sequence):
                ingest(factory, [msg(OTLP, k, value)])
            results.append(snapshot(eng, volatile=("received_at", "updated_at", "sampled_at")))
        finally:
            eng.dispose()
            if not db_url.startswith("sqlite"):
                drop_postgres_database(url)
    assert results[0] == results[1]
    assert results[0]["traces"][0]["question"] == QUESTION


def test_database_errors_propagate_as_sqlalchemy_errors(
    sessions: sessionmaker[Session], engine: Engine
) -> None:
    """The consumer rolls back and retries on SQLAlchemy errors; nothing is swallowed."""
    from sqlalchemy.exc import DBAPIError

    with engine.begin() as conn:
        conn.execute(text("DROP TABLE samples"))
    with sessions() as session, pytest.raises(DBAPIError):
        ingestor().ingest_batch(session, [msg(TOPIC, 0, trace_bytes(1))])
    with sessions() as session:  # the trace insert was not committed
        assert session.execute(text("SELECT count(*) FROM traces")).scalar() == 0
