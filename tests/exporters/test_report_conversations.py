"""The report's conversations section from sessions the real sessions job closed, on
SQLite and PostgreSQL: the rates with their intervals, turns to resolution and the worst
sessions; the explanation when none closed, and nothing when the store is unreachable."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from collector.jobs.queries.session_overview import session_overview, summarize
from collector.store.session import make_engine, make_session_factory
from exporters.report.conversations import conversations_section
from ragpulse.report_conversations import store_conversations
from tests.jobs.session_plant import failed, plant_session, resolved, sessions_job_of


def test_rates_with_intervals_and_the_worst_sessions(db_url: str) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    engine = make_engine(db_url)
    try:
        factory = make_session_factory(engine)
        resolved(factory, "ok", 30, now - timedelta(hours=2))
        failed(factory, "bad", 10, now - timedelta(hours=1))
        # the worst: asks again in other words, then for a person
        plant_session(
            factory,
            "worst",
            ("How do I reset my password?", "I forgot my password, how can I change it?",
             "Соедините меня с оператором"),
            now - timedelta(hours=1),
        )  # fmt: skip
        assert sessions_job_of(engine).run(now).status == "ok"
        with Session(engine) as session:
            seen = session_overview(session, now - timedelta(days=1), now)
        via_store = store_conversations(engine, now.timestamp(), 86400.0)
    finally:
        engine.dispose()
    assert seen.sessions == 41
    assert (seen.resolved.count, seen.re_asked.count, seen.escalated.count) == (30, 6, 6)
    assert seen.resolved.lower < 30 / 41 < seen.resolved.upper
    assert seen.turns_to_resolution.value == 2.0  # each resolved in its two turns
    assert seen.worst[0].session_id == "worst" and len(seen.worst) == 10
    assert all(not v.resolved for v in seen.worst)
    html = conversations_section(seen)
    assert via_store == html
    tiles = dict(re.findall(r'data-metric="(\w+)">(.*?)</div></div>', html))
    assert re.search(
        r">73%</div><div class=\"ci\">\[\d\d%, \d\d%\] · 30 of 41", tiles["session_resolved"]
    )
    assert "15%" in tiles["session_escalated"] and "6 of 41 sessions" in tiles["session_escalated"]
    rows = re.findall(r'<tr data-session="([^"]+)">(.*?)</tr>', html)
    assert rows[0][0] == "worst" and "asked for a person, 1 re-ask" in rows[0][1]
    assert "How do I reset my password?" in rows[0][1]


def test_no_session_yet_and_an_unreadable_store() -> None:
    now = datetime.now(UTC)
    empty = conversations_section(summarize([], now, now))
    assert "No closed session in the window" in empty and "Worst sessions" not in empty
    broken = create_engine("sqlite:////nonexistent/folder/db.sqlite")
    try:
        assert store_conversations(broken, 0.0, 3600.0) == ""
    finally:
        broken.dispose()
