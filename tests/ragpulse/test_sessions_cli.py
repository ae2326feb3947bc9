"""`ragpulse sessions`, `sessions show ID` and `sessions export` through the real CLI, on
SQLite and PostgreSQL, after the sessions job closed the planted conversations."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from collector.store.session import make_engine, make_session_factory
from tests.fixtures.cli import ragpulse_in_process as ragpulse
from tests.jobs.test_sessions_job import _job, _turn

EXPORT_KEYS = {
    "session_id",
    "started_at",
    "turns",
    "resolved",
    "re_asks",
    "escalated",
    "abandoned",
    "turns_to_resolution",
    "groups",
    "judged",
    "turn_outcomes",
}


@pytest.mark.slow
def test_sessions_list_worst_show_and_export(db_url: str, tmp_path: Path) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    engine = make_engine(db_url)
    try:
        factory = make_session_factory(engine)
        with factory() as session:
            at = now - timedelta(minutes=40)
            _turn(session, "reask", "a1", "How do I reset my password?", at)
            _turn(session, "reask", "a2", "I forgot my password, how can I change it?", at)
            at = now - timedelta(minutes=30)
            _turn(session, "fine", "b1", "Can I pay by card?", at, "beta")
            _turn(session, "fine", "b2", "Thanks, that helped", at + timedelta(seconds=5))
            at = now - timedelta(minutes=20)
            _turn(session, "human", "c1", "Where is my order?", at)
            _turn(session, "human", "c2", "Соедините меня с оператором, пожалуйста", at)
            _turn(session, "open", "d1", "Do you ship abroad?", now - timedelta(minutes=1))
            session.commit()
        assert _job(engine).run(now).new_traces == 3
    finally:
        engine.dispose()
    env = {"RAGPULSE_DATABASE__URL": db_url}

    text = ragpulse("sessions", "--worst", cwd=tmp_path, env=env)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0].startswith("3 closed sessions started") and "33.3% resolved" in lines[0]
    assert [line.split()[0] for line in lines[1:]] == ["human", "reask", "fine"]
    assert "escalated" in lines[1] and "1 re-ask" in lines[2] and "resolved" in lines[3]

    latest = ragpulse("sessions", "--json", "--limit", "2", cwd=tmp_path, env=env)
    rows = [json.loads(line) for line in latest.stdout.splitlines()]
    assert [r["session_id"] for r in rows] == ["human", "fine"]

    shown = ragpulse("sessions", "show", "reask", "--json", cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    one = json.loads(shown.stdout)
    assert one["closed"] is True and one["outcome"]["re_asks"] == 1
    assert [(t["trace_id"], t["re_asked"]) for t in one["turns"]] == [("a1", True), ("a2", False)]
    plain = ragpulse("sessions", "show", "human", cwd=tmp_path, env=env)
    assert plain.stdout.startswith("session human: 2 turns, unresolved, escalated")
    assert "escalation" in plain.stdout and "outcome: resolved=False" in plain.stdout
    still_open = ragpulse("sessions", "show", "open", cwd=tmp_path, env=env)
    assert "open (not closed yet)" in still_open.stdout
    missing = ragpulse("sessions", "show", "nope", cwd=tmp_path, env=env)
    assert missing.returncode == 1 and "no session 'nope'" in missing.stderr

    # the series' traces: the sessions' first turns, the unresolved first
    traced = ragpulse(
        "traces", "--metric", "session_resolved", "--since", "1d", cwd=tmp_path, env=env
    )
    assert traced.returncode == 0, traced.stderr
    listed = [line.split()[0] for line in traced.stdout.splitlines()[1:]]
    assert listed == ["a1", "c1", "b1"]

    out = tmp_path / "sessions.jsonl"
    exported = ragpulse(
        "sessions", "export", "--since", "7d", "--output", str(out), cwd=tmp_path, env=env
    )
    assert exported.returncode == 0, exported.stderr
    written = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["session_id"] for r in written] == ["reask", "fine", "human"]
    assert all(set(r) == EXPORT_KEYS for r in written)
    fine = written[1]
    assert fine["resolved"] is True and fine["turns"] == 2 and fine["turns_to_resolution"] == 2
    assert fine["groups"] == {"tenant": "beta"}
    assert written[2]["turn_outcomes"] == [
        {"trace_id": "c1", "re_asked": False, "escalation": False},
        {"trace_id": "c2", "re_asked": False, "escalation": True},
    ]
