"""`ragpulse_topic_*` from planted topics on SQLite and PostgreSQL, through a fresh
registry: the kept topics (the largest, plus an emerging one beyond them), the rest
folded into `other`, and the emerging flag of a new intent at 3% of the day."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy.orm import Session

from collector.settings import TopicSettings
from collector.store.session import make_engine, make_session_factory
from exporters.topics import OTHER, TopicSeries
from tests.jobs.test_topic_queries import STEADY, steady_and_new
from tests.jobs.topic_plant import plant


def _samples(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_kept_topics_other_and_emerging(db_url: str) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    engine = make_engine(db_url)
    try:
        with Session(engine) as session:
            plant(session, now, steady_and_new())
        settings = TopicSettings(series=2, emerging_min_traces=10)
        series = TopicSeries(
            make_session_factory(engine), settings, every_s=300, clock=now.timestamp
        )
        registry = CollectorRegistry()
        registry.register(series)
        assert _samples(registry) == {}  # nothing until the first refresh
        assert series.refresh()
        assert not series.refresh()  # not due yet
    finally:
        engine.dispose()
    got = _samples(registry)
    total = 4 * STEADY + 19
    topics = {dict(k)["topic"] for name, k in got if name == "ragpulse_topic_traces"}
    assert topics == {"0", "1", "9", OTHER}  # the 2 largest, the emerging one, the rest
    assert got["ragpulse_topic_info", (("label", "crypto, wallet"), ("topic", "9"))] == 1.0
    assert got["ragpulse_topic_emerging", (("topic", "9"),)] == 1.0
    assert got["ragpulse_topic_emerging", (("topic", "0"),)] == 0.0
    assert ("ragpulse_topic_emerging", (("topic", OTHER),)) not in got
    assert got["ragpulse_topic_traces", (("topic", OTHER),)] == 2 * STEADY
    assert got["ragpulse_topic_share", (("topic", "9"),)] == pytest.approx(19 / total)
    assert got["ragpulse_topic_share", (("topic", OTHER),)] == pytest.approx(2 * STEADY / total)
    assert got["ragpulse_topic_share_change", (("topic", "9"),)] > 0.02


def test_a_database_error_is_logged_not_raised() -> None:
    def broken() -> Session:
        raise RuntimeError("database down")

    series = TopicSeries(broken, TopicSettings(), every_s=0)
    assert not series.refresh()
    assert series.current() == ()
