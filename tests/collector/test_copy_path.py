"""The PostgreSQL COPY fast path for new JSON traces, and its fallback on a concurrent write."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session, sessionmaker

from collector.ingest.pipeline import Ingestor, RawMessage
from collector.settings import load_settings
from collector.store import copy_text, repository
from collector.store.models import DeadLetter, SampleRecord, Trace
from collector.store.session import make_engine, make_session_factory
from tests.collector.traces import make_trace, trace_bytes, trace_id

TOPIC = "rag.traces"


@pytest.fixture
def sessions(postgres_url: str) -> Iterator[sessionmaker[Session]]:
    engine: Engine = make_engine(postgres_url)
    yield make_session_factory(engine)
    engine.dispose()


def _ingestor() -> Ingestor:
    return Ingestor(load_settings(sampling={"real_users_benchmark": 1.0, "judge": 1.0}))


def _messages(values: list[bytes], start: int = 0) -> list[RawMessage]:
    return [RawMessage(TOPIC, 0, start + i, None, v) for i, v in enumerate(values)]


def _encode(trace: dict[str, Any]) -> bytes:
    return json.dumps(trace, ensure_ascii=False).encode()


def test_line_escapes_copy_specials_and_writes_nulls() -> None:
    fields = [copy_text.text("a\tb\nc\rd\\e"), copy_text.text(None), copy_text.json({"q": 'x"\\'})]
    assert copy_text.line(fields) == b'a\\tb\\nc\\rd\\\\e\t\\N\t{"q":"x\\\\"\\\\\\\\"}\n'


def test_awkward_values_round_trip_through_copy(sessions: sessionmaker[Session]) -> None:
    trace = make_trace(1)
    trace["question"] = "tab\there\nnew line\r\\N literally, \\ backslash, «кавычки» 😀"
    trace["answer"] = "\\N"
    trace["reference"] = ""
    trace["contexts"][0]["text"] = 'quote " and \\ and \t and \n in JSON'
    trace["tags"] = {"tenant": "a\tb", "n": 3, "f": 1e-05}
    trace["turn"] = 2**31 - 1  # the largest a 32-bit column holds (turns are >= 0)
    with sessions() as session:
        result = _ingestor().ingest_batch(session, _messages([_encode(trace)]))
        session.commit()
    assert result.stored == 1
    with sessions() as session:
        row = session.scalars(select(Trace)).one()
    assert row.question == trace["question"]
    assert row.answer == "\\N"
    assert row.reference == ""
    assert row.user_id == trace["user_id"]
    assert row.contexts is not None and row.contexts[0]["text"] == trace["contexts"][0]["text"]
    assert row.contexts[1] == trace["contexts"][1]
    assert row.tags == trace["tags"]
    assert row.turn == 2**31 - 1
    assert row.usage == trace["usage"]
    assert row.judge_decision is trace["judge"]["decision"]
    assert row.cache_similarity == trace["cache"]["similarity"]
    assert row.timestamp.isoformat().startswith("2026-11-20T09:00:01")


def test_concurrent_duplicate_falls_back_and_counts_exactly(
    sessions: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    ingestor = _ingestor()
    with sessions() as other:  # another writer stores trace 2 after our pre-check
        ingestor.ingest_batch(other, _messages([trace_bytes(2)], start=100))
        other.commit()
    monkeypatch.setattr(repository, "existing_trace_ids", lambda session, ids: [])
    copied: list[bool] = []
    real_copy = repository.copy_new_rows

    def spy(*args: Any) -> bool:
        copied.append(real_copy(*args))
        return copied[-1]

    monkeypatch.setattr(repository, "copy_new_rows", spy)
    batch = [trace_bytes(i) for i in range(1, 5)] + [b"not json"]
    with sessions() as session:
        result = ingestor.ingest_batch(session, _messages(batch))
        session.commit()
    assert copied == [False]  # the COPY hit the unique index and was rolled back
    assert (result.stored, result.duplicates, result.invalid) == (3, 1, 1)
    with sessions() as session:
        ids = set(session.scalars(select(Trace.trace_id)))
        assert ids == {trace_id(i) for i in range(1, 5)}
        # the dead letter written before the savepoint survived its rollback
        assert session.scalar(select(func.count()).select_from(DeadLetter)) == 1
        sampled = set(session.scalars(select(SampleRecord.trace_id)))
    assert {trace_id(i) for i in (1, 3, 4)} <= sampled


def test_new_batch_takes_the_copy_path(
    sessions: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    copied: list[bool] = []
    real_copy = repository.copy_new_rows

    def spy(*args: Any) -> bool:
        copied.append(real_copy(*args))
        return copied[-1]

    monkeypatch.setattr(repository, "copy_new_rows", spy)
    ingestor = _ingestor()
    values = [trace_bytes(i, "ru" if i % 2 else "en", size_bytes=4000) for i in range(300)]
    with sessions() as session:
        first = ingestor.ingest_batch(session, _messages(values))
        session.commit()
    with sessions() as session:  # a replay is caught by the pre-check: no COPY at all
        again = ingestor.ingest_batch(session, _messages(values))
        session.commit()
    assert copied == [True]
    assert (first.stored, again.stored, again.duplicates) == (300, 0, 300)
    with sessions() as session:
        assert session.scalar(select(func.count()).select_from(Trace)) == 300
