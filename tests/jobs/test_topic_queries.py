"""The topic queries on SQLite and PostgreSQL: traffic per topic, a planted new intent at
3% of a day reported as emerging and steady topics not, and the knowledge-gap list
ranking the topic the corpus fails the most first, with its intervals and examples."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.orm import Session, sessionmaker

from collector.jobs.queries.topic_gaps import topic_gaps
from collector.jobs.queries.topic_overview import overview
from collector.jobs.queries.topic_traffic import emergence, topic_counts
from collector.settings import TopicSettings
from collector.store.session import make_engine, make_session_factory
from collector.store.topics import load_topics
from evaluators.aggregate import wilson_interval
from tests.jobs.topic_plant import Planted, plant

NOW = datetime.now(UTC).replace(microsecond=0)
STEADY = 150
"""Traces a day of each steady topic."""


def steady_and_new() -> list[Planted]:
    """Four steady topics, one failing retrieval for 40% of its traces, and a new intent
    first found 6 hours ago at 3% of the last day's traffic (a few traces before)."""
    days = 8
    return [
        Planted(0, ("card", "delivery"), [STEADY] * days, empty=0.4, no_answer=0.3),
        Planted(1, ("password", "reset"), [STEADY] * days),
        Planted(2, ("exchange", "rate"), [STEADY] * days, miss=0.2),
        Planted(3, ("refund", "status"), [STEADY] * days),
        Planted(9, ("crypto", "wallet"), [19, 1, 1], first_seen_hours=6, no_answer=0.9),
    ]


@pytest.fixture
def factory(db_url: str) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(db_url)
    try:
        yield make_session_factory(engine)
    finally:
        engine.dispose()


def test_counts_and_emerging(factory: sessionmaker[Session]) -> None:
    with factory() as session:
        total = plant(session, NOW, steady_and_new())
        counts = topic_counts(session, NOW - timedelta(days=1), NOW)
        assert counts == {0: STEADY, 1: STEADY, 2: STEADY, 3: STEADY, 9: 19}
        assert sum(topic_counts(session, NOW - timedelta(days=30), NOW).values()) == total
        settings = TopicSettings(emerging_min_traces=10)
        found = emergence(session, load_topics(session), NOW, settings)
    assert sorted(t for t, e in found.items() if e.emerging) == [9]
    new = found[9]
    assert new.new and new.recent == 19 and new.baseline == 2
    assert new.recent_share == pytest.approx(19 / (4 * STEADY + 19))
    assert not any(found[t].new for t in (0, 1, 2, 3))


def test_gap_list_ranks_the_failing_topic_first(factory: sessionmaker[Session]) -> None:
    with factory() as session:
        plant(session, NOW, steady_and_new())
        gaps = topic_gaps(session, NOW - timedelta(days=7), NOW, page=97)
    assert [g.topic for g in gaps][:2] == [0, 2]
    first = gaps[0]
    assert first.volume == 7 * STEADY
    assert first.measured == first.volume
    low, high = wilson_interval(first.failed, first.measured)
    assert (first.lower, first.upper) == pytest.approx((low, high))
    assert 0.45 < first.failure_rate < 0.7  # 1 - 0.6 x 0.7 of the traces fail something
    empty = first.signals["retrieval_empty_rate"]
    assert empty.n == first.volume and 0.3 < empty.value < 0.5
    assert empty.lower < empty.value < empty.upper
    assert first.signals["no_answer_rate"].n == first.volume
    assert first.signals["hit_rate@5"].n == first.volume // 2 + (first.volume % 2)
    assert first.examples and all(q.startswith("card delivery") for q in first.examples)
    assert "turn_re_asked" not in first.signals  # no sessions planted here
    # a smaller page reads the same traces
    with factory() as session:
        again = topic_gaps(session, NOW - timedelta(days=7), NOW, page=1000)
    assert [(g.topic, g.failed, g.measured) for g in again] == [
        (g.topic, g.failed, g.measured) for g in gaps
    ]


def test_overview_rows(factory: sessionmaker[Session]) -> None:
    with factory() as session:
        plant(session, NOW, steady_and_new())
        seen = overview(
            session,
            TopicSettings(emerging_min_traces=10),
            NOW - timedelta(days=1),
            NOW,
            signals=True,
        )
    assert seen.traces == 4 * STEADY + 19 and seen.without_topic == 0
    assert [r.topic.id for r in seen.rows][-1] == 9
    assert [r.topic.id for r in seen.rows if r.emerging] == [9]
    assert all(r.gap is not None for r in seen.rows)
    assert seen.gaps[0].topic == 0


def test_re_asked_answers_are_a_gap_signal(factory: sessionmaker[Session]) -> None:
    """Answers the user asked again in other words (the sessions job's `turn_re_asked`)
    make a topic's gap: the only failing signal of topic 1 here."""
    topics = [
        Planted(0, ("card", "delivery"), [60] * 7),
        Planted(1, ("account", "close"), [60] * 7, re_asked=0.6),
    ]
    with factory() as session:
        plant(session, NOW, topics)
        gaps = topic_gaps(session, NOW - timedelta(days=7), NOW)
    assert gaps[0].topic == 1
    asked = gaps[0].signals["turn_re_asked"]
    assert asked.n == 140 and 0.45 < asked.value < 0.75 and asked.failed > 60
    assert asked.lower < asked.value < asked.upper
    assert gaps[1].failed == 0
