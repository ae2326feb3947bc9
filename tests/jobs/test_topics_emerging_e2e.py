"""The planted scenario of issue 41 on the real topics job, on SQLite and PostgreSQL: a
week of steady traffic of three intents, clustered and assigned every day; then a new
intent at 3% of a day's questions is found as a new topic by the next re-clustering and
reported as emerging, while the steady intents are not."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy.orm import Session, sessionmaker

from collector.jobs.queries.topic_traffic import emergence
from collector.settings import TopicSettings
from collector.store.session import make_engine, make_session_factory
from collector.store.topics import load_topics
from tests.jobs.test_topics_job import NEW_PHRASES, NOW, PHRASES, _assigned, _job, _plant

PER_DAY = 150
"""Questions a day of each steady intent."""
NEW = 14
"""The new intent's questions on its first day: 14 of 464, 3.0%."""


@pytest.fixture
def factory(db_url: str) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(db_url)
    try:
        yield make_session_factory(engine)
    finally:
        engine.dispose()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_new_intent_at_3_percent_is_emerging_within_a_day(
    factory: sessionmaker[Session],
) -> None:
    settings = {"lookback": "2d", "min_topic_size": 8}
    job = _job(factory, **settings)
    steady: dict[str, int] = {}
    for day in range(7, 0, -1):
        when = NOW - timedelta(days=day)
        for cluster, phrases in enumerate(PHRASES[:3]):
            steady |= _plant(
                factory, cluster, PER_DAY, day * 1000, when, phrases, seed=100 * day + cluster
            )
        assert job.run(when + timedelta(minutes=1)).status == "ok"
    when = NOW - timedelta(hours=1)
    for cluster, phrases in enumerate(PHRASES[:3]):
        steady |= _plant(factory, cluster, PER_DAY, 0, when, phrases, seed=cluster)
    fresh = _plant(factory, 4, NEW, 0, when, NEW_PHRASES, seed=40)
    later = NOW + timedelta(minutes=2)  # a day after the last re-clustering
    report = job.run(later)
    assert report.status == "ok" and "re-clustered" in report.message, report.message
    assigned = _assigned(factory)
    new_ids = {assigned[t] for t in fresh}
    assert len(new_ids) == 1, new_ids
    (new_id,) = new_ids
    with factory() as session:
        topics = load_topics(session)
        found = emergence(session, topics, later, TopicSettings(emerging_min_traces=10, **settings))
    assert new_id is not None and found[new_id].new
    assert [t for t, e in found.items() if e.emerging] == [new_id]
    share = found[new_id].recent_share
    assert share is not None and 0.025 < share < 0.035
