"""The report's "Topics" table and "Knowledge gaps" list from planted topics on SQLite
and PostgreSQL: volumes, shares, the emerging badge, and the failing topic first with its
failure rate, interval, signals and example questions."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from collector.jobs.queries.topic_overview import Overview, overview
from collector.settings import Settings, TopicSettings
from collector.store.session import make_engine
from exporters.report.topics import topics_section
from ragpulse.report_topics import store_topics
from tests.jobs.test_topic_queries import STEADY, steady_and_new
from tests.jobs.topic_plant import plant


def test_topics_table_and_gap_list(db_url: str) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    engine = make_engine(db_url)
    try:
        with Session(engine) as session:
            plant(session, now, steady_and_new())
            seen = overview(
                session,
                TopicSettings(emerging_min_traces=10),
                now - timedelta(days=7),
                now,
                signals=True,
            )
        settings = Settings(topics=TopicSettings(emerging_min_traces=10))
        via_store = store_topics(settings, engine, now.timestamp(), None)
    finally:
        engine.dispose()
    html = topics_section(seen)
    assert via_store == html  # the report's default window: the 7 days
    rows = re.findall(r'<tr data-topic="(\d+)">(.*?)</tr>', html)
    assert [int(t) for t, _ in rows] == [0, 1, 2, 3, 9]  # largest first
    first = dict(rows)["0"]
    assert f'<td class="num">{7 * STEADY}</td>' in first and "card, delivery" in first
    # each tier's headline metric with its 95% interval where measured (retrieval here)
    assert '<th class="num">hit_rate@5 [95% CI]</th>' in html
    assert re.search(r'<td class="num">\d+(\.\d)?% \[\d+(\.\d)?%, \d+(\.\d)?%\]</td>', first)
    emerging = [t for t, cells in rows if "EMERGING" in cells]
    assert emerging == ["9"]
    assert "+" in dict(rows)["9"] and " pp<" in dict(rows)["9"]
    gaps = re.findall(r'<li data-topic="(\d+)">(.*?)</li>(?=<li data-topic|</ol>)', html, re.S)
    assert [int(t) for t, _ in gaps][:2] == [0, 2]
    top = gaps[0][1]
    assert re.search(r"\d+% failed</span> \[\d+%, \d+%\] of 1050 measured traces", top)
    assert "retrieval_empty_rate" in top and "no_answer_rate" in top
    assert "<li>card delivery #" in top  # example questions of failed traces
    assert "at least" in top


def test_no_topics_yet_and_an_unreadable_store() -> None:
    now = datetime.now(UTC)
    empty = topics_section(
        Overview(since=now, until=now, traces=0, without_topic=0, rows=(), gaps=())
    )
    assert "No topics yet" in empty and "Knowledge gaps" not in empty
    broken = create_engine("sqlite:////nonexistent/folder/db.sqlite")
    try:
        assert store_topics(Settings(), broken, 0.0, 3600.0) == ""
    finally:
        broken.dispose()
