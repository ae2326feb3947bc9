"""Stored traces and validated records map to the same evaluator `Sample`."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from sqlalchemy import select

from collector.ingest.decode.trace_json import parse_trace_record
from collector.store.models import Trace
from collector.store.repository import insert_traces
from collector.store.samples import COLUMNS, FIELD_COLUMNS, record_to_sample, trace_to_sample
from collector.store.session import make_engine, make_session_factory
from evaluators.sample import Sample
from tests.collector.traces import make_trace


@pytest.mark.parametrize(
    "extra",
    [
        {"relevance": {"doc-49": 2, "doc-50": 0}, "reference": "Эталон"},
        {"shown_url": ["https://kb.example.org/ru/doc-49"], "judge": {}, "tags": {"n": 3.0}},
    ],
)
def test_a_record_maps_as_the_trace_it_is_stored_as(db_url: str, extra: dict[str, Any]) -> None:
    rec = parse_trace_record(make_trace(7, "ru") | extra)
    engine = make_engine(db_url)
    try:
        with make_session_factory(engine)() as session:
            insert_traces(session, [rec])
            session.commit()
            stored = session.scalars(select(Trace)).one()
    finally:
        engine.dispose()
    for priority in (("relevance", "relevant_ids", "shown_url"), ("shown_url",)):
        assert trace_to_sample(stored, priority) == record_to_sample(rec, priority)


def test_a_record_sample() -> None:
    raw = make_trace(7, "ru") | {"relevance": {"doc-49": 2, "doc-50": 0}, "reference": "Эталон"}
    sample = record_to_sample(parse_trace_record(raw))
    assert sample.relevance == {"doc-49": 2, "doc-50": 0}  # graded wins over relevant_ids
    assert sample.reference == "Эталон"
    assert sample.contexts[0].key == "doc-49"
    assert sample.judge is not None and sample.judge.model == "judge-mini"
    # an empty judge object is no decision, as for the stored trace
    assert record_to_sample(parse_trace_record(raw | {"judge": {}})).judge is None


class _Reads:
    """A row of NULL columns that notes which of them are read."""

    def __init__(self, columns: tuple[str, ...]) -> None:
        self.columns = columns
        self.read: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        if name not in self.columns:
            raise AttributeError(name)
        self.read.add(name)
        return None


def test_the_mapping_reads_exactly_the_columns_of_its_table() -> None:
    assert FIELD_COLUMNS.keys() == {f.name for f in dataclasses.fields(Sample)}
    row = _Reads(COLUMNS)
    trace_to_sample(cast(Trace, row))
    assert row.read == set(COLUMNS)


def test_sparse_row() -> None:
    row = Trace(
        trace_id="t",
        timestamp=datetime(2026, 1, 1, tzinfo=UTC),
        question="q",
        contexts=[{"url": "https://x"}, {"text": "t", "score": 1}],
        tags={"tenant": "acme", "shard": 3.0, "rate": 0.5},
    )
    sample = trace_to_sample(row)
    assert sample.judge is None and sample.relevance is None
    assert [c.key for c in sample.contexts] == ["https://x", None]
    assert sample.contexts[1].score == 1.0
    assert dict(sample.tags) == {"tenant": "acme", "shard": "3", "rate": "0.5"}
