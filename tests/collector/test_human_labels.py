"""Human labels through `Ingestor.ingest_batch`, on SQLite and PostgreSQL: once per (trace,
metric, labeler), the newest wins whatever the arrival order, bad labels only warn."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from collector.ingest.decode.trace_json import parse_feedback_event
from collector.store.session import make_engine, make_session_factory
from tests.collector.test_repository import TOPIC, fb, ingest, msg
from tests.collector.traces import make_feedback, make_trace, trace_id


@pytest.fixture
def sessions(db_url: str) -> Iterator[sessionmaker[Session]]:
    eng = make_engine(db_url)
    yield make_session_factory(eng)
    eng.dispose()


def _labels(sessions: sessionmaker[Session]) -> list[tuple[Any, ...]]:
    with sessions() as session:
        rows = session.execute(
            text("SELECT trace_id, metric, labeler, value FROM human_labels ORDER BY 1, 2, 3")
        )
        return [tuple(r) for r in rows]


def test_labels_from_traces_and_feedback_once_per_labeler(
    sessions: sessionmaker[Session],
) -> None:
    trace = make_trace(1) | {"labels": {"faithfulness": 0.4, "context_relevance": 1}}
    first = ingest(
        sessions,
        [
            # feedback before its trace: a late and an early label of the same labeler
            fb(1, 1, seconds_after=120, labels={"faithfulness": 0.9}, labeler="anna"),
            fb(1, 2, seconds_after=60, labels={"faithfulness": 0.1}, labeler="anna"),
            fb(1, 3, labels={"faithfulness": 1.0, "e2e_score": 5}, labeler="boris"),
            msg(TOPIC, 4, json.dumps(trace, ensure_ascii=False).encode()),
        ],
    )
    assert first.field_warnings == {"labels": 1}
    assert first.stored == 1 and first.feedback == 3
    t = trace_id(1)
    expected = [
        (t, "context_relevance", "", 1.0),
        (t, "faithfulness", "", 0.4),
        (t, "faithfulness", "anna", 0.9),
        (t, "faithfulness", "boris", 1.0),
    ]
    assert _labels(sessions) == expected

    # Replays change nothing; an older label of anna arriving late changes nothing either.
    again = ingest(
        sessions,
        [
            fb(1, 5, seconds_after=120, labels={"faithfulness": 0.9}, labeler="anna"),
            fb(1, 6, seconds_after=30, labels={"faithfulness": 0.0}, labeler="anna"),
        ],
    )
    assert again.duplicates == 1 and again.feedback == 1
    assert _labels(sessions) == expected

    # A newer one replaces hers.
    ingest(sessions, [fb(1, 7, seconds_after=600, labels={"faithfulness": 0.5}, labeler="anna")])
    assert (t, "faithfulness", "anna", 0.5) in _labels(sessions)
    assert len(_labels(sessions)) == 4


def test_a_feedback_event_keeps_its_hash_without_labels() -> None:
    event = make_feedback(3)
    plain = parse_feedback_event(event)
    assert plain.labels is None and plain.field_warnings == ()
    labelled = parse_feedback_event(event | {"labels": {"faithfulness": 1}})
    assert labelled.event_hash != plain.event_hash
    bad = parse_feedback_event(event | {"labels": {"faithfulness": 2}, "labeler": ["x"]})
    assert bad.event_hash == plain.event_hash  # nothing valid was added
    assert bad.field_warnings == ("labels", "labeler")
