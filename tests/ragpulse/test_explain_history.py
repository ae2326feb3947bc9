"""`ragpulse explain` on a young store: it says how much history there is instead of
refusing for a reason it does not name, explains with the shorter baseline it has (and
says so), and puts a share of the change beyond ±100% (a mix effect) into words."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from collector.jobs.queries.explain import explain
from collector.store.models import JobOutcome
from collector.store.session import make_engine, make_session_factory
from ragpulse.cli import main

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
UNTIL = NOW.isoformat()


def _outcomes(url: str, rows: list[tuple[datetime, float, str]]) -> None:
    """(time, hit_rate@1, version) per trace, as the real_users_benchmark job stores them."""
    engine = make_engine(url)
    with make_session_factory(engine)() as session:
        for i, (ts, hit, version) in enumerate(rows):
            session.add(
                JobOutcome(
                    job="real_users_benchmark",
                    trace_id=f"t{i}",
                    trace_updated_at=ts,
                    ts=ts,
                    groups={},
                    outcomes={"hit_rate@1": hit},
                    slices={"version": version, "tenant": "acme" if i % 2 else "beta"},
                )
            )
        session.commit()
    engine.dispose()


def _spread(span: timedelta, count: int) -> list[tuple[datetime, float, str]]:
    """`count` traces over the `span` before NOW, the first exactly `span` before it."""
    return [
        (NOW - span + span * i / count, float(i % 3 == 0), "v1" if i % 4 else "v2")
        for i in range(count)
    ]


def _explain(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["explain", "--metric", "hit_rate@1", "--until", UNTIL, *argv])
    return code, capsys.readouterr().out


def test_a_fresh_store_says_what_is_missing_and_explains_with_the_history_there_is(
    sqlite_url: str, monkeypatch: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 39: in the first hour `explain` explains the last quarter of the scored
    traces against the rest (and says so), instead of refusing."""
    _outcomes(sqlite_url, _spread(timedelta(minutes=20), 200))
    monkeypatch.setenv("RAGPULSE_DATABASE__URL", sqlite_url)
    code, out = _explain(capsys)  # the defaults: a 1h window, a 7d baseline
    assert code == 0, out
    first, second = out.splitlines()[:2]
    assert (
        first == "hit_rate@1: 20 min of history; the 7d baseline before the 1h window needs ≥ 1h."
    )
    # the newest quarter of the 200 traces: the 50 from 11:55 to the newest, 6 s before NOW
    assert second == (
        "  Explained with the history there is: the newest quarter of the scored traces (the "
        "last 4 min, to 11:59:54 UTC) against the older ones (15 min); the 1h window and 7d "
        "baseline work once 1h of history precedes the window"
    )
    assert "window n=50, baseline n=150 (2026-11-25 11:40:00 – 2026-11-25 11:55:00 UTC)" in out
    code, out = _explain(capsys, "--json")
    found = json.loads(out)
    assert (found["n_window"], found["n_baseline"]) == (50, 150)
    assert found["history_note"].startswith("hit_rate@1: 20 min of history")
    # explicit spans the history does not hold take the same way
    code, out = _explain(capsys, "--since", "2m", "--baseline", "30m")
    assert code == 0 and "Explained with the history there is" in out
    code, out = _explain(capsys, "--since", "5m", "--baseline", "15m")
    assert code == 0, out
    assert "of history before the window" not in out  # the 15m baseline is all there
    assert "Explained with" not in out


def test_a_store_with_nothing_scored_says_to_wait(
    sqlite_url: str, monkeypatch: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RAGPULSE_DATABASE__URL", sqlite_url)
    code, out = _explain(capsys)
    assert code == 1
    assert out == (
        "hit_rate@1: no history; the 7d baseline before the 1h window needs ≥ 1h; the jobs "
        "score new traffic every 60s: run it again in a minute or two\n"
    )
    _outcomes(sqlite_url, [(NOW - timedelta(seconds=s), 1.0, "v1") for s in (30, 20, 10)])
    code, out = _explain(capsys)  # 20 s of scored traces: too short to compare two parts
    assert code == 1 and out.startswith("hit_rate@1: 30 s of history; the 7d baseline")
    assert "run it again in a minute or two" in out


def test_uneven_young_traffic_is_split_by_count(
    sqlite_url: str, monkeypatch: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The demo's first minutes hold more early traces than late ones: the newest quarter
    is a quarter of the traces, not of the time, so both parts have some."""
    rows = [(NOW - timedelta(minutes=4, seconds=i % 20), float(i % 2), "v1") for i in range(90)]
    rows += [(NOW - timedelta(seconds=10 * i), float(i % 3 == 0), "v2") for i in range(1, 11)]
    _outcomes(sqlite_url, rows)
    monkeypatch.setenv("RAGPULSE_DATABASE__URL", sqlite_url)
    code, out = _explain(capsys, "--json")
    assert code == 0, out
    found = json.loads(out)
    assert (found["n_window"], found["n_baseline"]) == (25, 75)


def test_a_shorter_baseline_is_used_and_said(
    sqlite_url: str, monkeypatch: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    _outcomes(sqlite_url, _spread(timedelta(hours=3), 600))
    monkeypatch.setenv("RAGPULSE_DATABASE__URL", sqlite_url)
    code, out = _explain(capsys)
    assert code == 0, out
    assert "baseline n=400 (the 2h of history before the window, 7d asked: " in out
    assert "2026-11-25 09:00 – 2026-11-25 11:00 UTC" in out
    code, out = _explain(capsys, "--json")
    found = json.loads(out)
    assert found["baseline_from"] == "2026-11-25T09:00:00+00:00"
    assert found["baseline_asked"] == "7d"


def _mixed() -> list[tuple[datetime, float, str]]:
    """Baseline: v1 and v2 at 0.5 each. Window: v1 up to 0.754, v2 down to 0.446, both
    still half the traffic: the mean rises 0.1, v1 moved it +0.127 (127%), v2 -0.027."""
    rows = []
    for version, hits in (("v1", 377), ("v2", 223)):
        for i in range(500):
            rows.append((NOW - timedelta(hours=2, seconds=i), float(i < 250), version))
            rows.append((NOW - timedelta(seconds=i + 1), float(i < hits), version))
    return rows


def test_a_share_beyond_100_percent_is_put_into_words(
    sqlite_url: str, monkeypatch: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    _outcomes(sqlite_url, _mixed())
    engine = make_engine(sqlite_url)
    with make_session_factory(engine)() as session:
        found = explain(
            session,
            jobs=["real_users_benchmark"],
            metric="hit_rate@1",
            since=NOW - timedelta(hours=1),
            until=NOW,
            baseline=timedelta(hours=7),
            dimensions=["version"],
        )
    engine.dispose()
    assert found is not None and found.top is not None
    assert found.delta == pytest.approx(0.1)
    assert found.top.name == "version v1" and found.top.fraction == pytest.approx(1.27)
    assert found.headline() == (
        "hit_rate@1 rose 0.1 (0.5 -> 0.6); 127% of the rise is version v1, while the other "
        "slices together moved -27% against it"
    )
    note = found.mix_note(found.slices)
    assert note == (
        "shares beyond ±100% are mix effects: version v1 alone moved the mean +0.127, 127% "
        "of the net rise of +0.1, and the other version slices together -0.027 (-27%), the "
        "other way; a dimension's slices add up to 100%"
    )

    monkeypatch.setenv("RAGPULSE_DATABASE__URL", sqlite_url)
    code, out = _explain(capsys, "--baseline", "7h", "--dimensions", "version")
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0] == found.headline() and lines[-1] == f"  {note}"
    code, out = _explain(capsys, "--baseline", "7h", "--dimensions", "version", "--json")
    assert json.loads(out)["mix_note"] == note
    # shares within ±100% need no words
    assert found.mix_note([c for c in found.slices if abs(c.fraction) <= 1]) is None
