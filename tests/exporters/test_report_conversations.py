"""The report's conversations section from sessions the real sessions job closed, on
SQLite and PostgreSQL: the rates with their intervals, turns to resolution and the worst
sessions; the explanation when none closed, and nothing when the store is unreachable."""

from __future__ import annotations

import os
import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from collector.jobs.queries.session_overview import session_overview, summarize
from collector.store.session import make_engine, make_session_factory
from exporters.report.conversations import conversations_section
from exporters.report.page import page
from ragpulse.report_conversations import store_conversations
from tests.jobs.session_plant import failed, plant_session, resolved, sessions_job_of


def _planted(db_url: str, now: datetime) -> tuple[str, Any]:
    """The section's HTML through the store, and the overview, of 30 resolved sessions,
    10 failed ones and one that re-asks and then asks for a person."""
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
    return via_store, seen


def test_rates_with_intervals_and_the_worst_sessions(db_url: str) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    via_store, seen = _planted(db_url, now)
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


def test_the_section_in_chromium(sqlite_url: str, chromium: Any, tmp_path: Path) -> None:
    """Drawn in a real browser inside the report's page: six tiles in one row, each with
    its value and interval, the worst sessions' table below."""
    html, _seen = _planted(sqlite_url, datetime.now(UTC).replace(microsecond=0))
    output = tmp_path / "conversations.html"
    output.write_text(page("ragpulse report", ["conversations"], html), encoding="utf-8")
    shown = chromium.open(output.as_uri())
    shot = shown.screenshot(tmp_path / "conversations.png")
    if os.environ.get("REPORT_SCREENSHOTS_DIR"):
        shutil.copy(shot, Path(os.environ["REPORT_SCREENSHOTS_DIR"]) / "report-conversations.png")
    assert shown.console_errors == []
    tiles = shown.evaluate(
        "Array.from(document.querySelectorAll('.conv-tile')).map(t => ({"
        " top: Math.round(t.getBoundingClientRect().top),"
        " height: t.getBoundingClientRect().height, text: t.innerText}))"
    )
    assert len(tiles) == 6 and len({t["top"] for t in tiles}) == 1  # one row
    assert all(t["height"] > 30 for t in tiles)
    assert "73%" in tiles[0]["text"] and "30 of 41 sessions" in tiles[0]["text"]
    rows = shown.evaluate("document.querySelectorAll('table.sessions tr[data-session]').length")
    assert rows == 10


def test_no_session_yet_and_an_unreadable_store() -> None:
    now = datetime.now(UTC)
    empty = conversations_section(summarize([], now, now))
    assert "No closed session in the window" in empty and "Worst sessions" not in empty
    broken = create_engine("sqlite:////nonexistent/folder/db.sqlite")
    try:
        assert store_conversations(broken, 0.0, 3600.0) == ""
    finally:
        broken.dispose()
