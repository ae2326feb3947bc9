"""`ragpulse plan`: detectable drops and needed volumes agree with each other and the detector."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from collector.settings import load_settings
from collector.store.models import JobOutcome, Judgment, MetricResult
from collector.store.session import make_engine, make_session_factory
from migrations.runner import upgrade
from ragpulse.planning import NOT_DETECTABLE, plan
from tests.fixtures.cli import ragpulse_in_process as ragpulse

NOW = datetime.now(UTC)


def _row(
    metric: str, value: float, n: int, group: str = "", ci: float | None = None
) -> MetricResult:
    return MetricResult(
        job="j",
        metric=metric,
        window="7d",
        group_key=group,
        group_labels={"tenant": group.split("=")[1]} if group else None,
        value=value,
        n=n,
        skipped=0,
        errors=0,
        ci_lower=None if ci is None else value - ci,
        ci_upper=None if ci is None else value + ci,
        window_start=NOW - timedelta(days=7),
        window_end=NOW,
        computed_at=NOW,
        signature="",
    )


def _db(tmp_path: Path, hit_n: int) -> str:
    url = f"sqlite:///{tmp_path / 'p.db'}"
    upgrade(url)
    engine = make_engine(url)
    with make_session_factory(engine)() as session:
        session.add_all(
            [
                _row("hit_rate@1", 0.6, hit_n),
                _row("hit_rate@1", 0.6, hit_n // 3, "tenant=acme"),
                _row("faithfulness", 0.8, 10_080, ci=0.004),  # 60 judged an hour
                _row("n_clusters", 12, 100),  # no direction: not planned
            ]
        )
        for i in range(100):
            session.add(
                Judgment(
                    cache_key=f"k{i}",
                    metric="faithfulness",
                    model="m",
                    prompt_version="1",
                    input_hash="h",
                    temperature=0.1,
                    trace_id=f"t{i // 2}",
                    status="ok",
                    cost_usd=0.001,
                    created_at=NOW - timedelta(hours=1),
                )
            )
        session.commit()
    engine.dispose()
    return url


def _plan(url: str, detect: float, within_s: float) -> dict[tuple[str, str], object]:
    settings = load_settings(database={"url": url})
    engine = make_engine(url)
    with make_session_factory(engine)() as session:
        rows = plan(session, settings, detect, within_s, NOW)
    engine.dispose()
    return {(r.metric, r.group): r for r in rows}


def test_needed_volume_and_detectable_drop_are_inverse(tmp_path: Path) -> None:
    url = _db(tmp_path, hit_n=200 * 168)
    rows = _plan(url, 0.2, 3600.0)
    assert set(rows) == {("hit_rate@1", ""), ("hit_rate@1", "tenant=acme"), ("faithfulness", "")}
    overall = rows[("hit_rate@1", "")]
    assert overall.per_hour == pytest.approx(200.0)
    assert 0.05 < overall.detectable < rows[("hit_rate@1", "tenant=acme")].detectable
    # at exactly the volume it asks for, the plan's drop is what gets paged within the hour
    (tmp_path / "b").mkdir()
    again = _plan(_db(tmp_path / "b", int(overall.needed_per_hour * 168)), 0.2, 3600.0)
    assert again[("hit_rate@1", "")].detectable == pytest.approx(0.2, rel=0.02)


def test_judge_rate_and_cost(tmp_path: Path) -> None:
    url = _db(tmp_path, hit_n=1000)
    row = _plan(url, 0.1, 3 * 3600.0)[("faithfulness", "")]
    assert row.judged and row.per_hour == pytest.approx(60.0)
    # sampling.judge 5% gives 60 an hour; the rate scales with what is needed
    assert row.judge_rate == pytest.approx(0.05 * row.needed_per_hour / 60.0)
    traffic_per_day = 60 / 0.05 * 24
    assert row.judge_usd_per_day == pytest.approx(min(row.judge_rate, 1) * traffic_per_day * 0.002)


@pytest.mark.slow
def test_plan_command_prints_the_table(tmp_path: Path) -> None:
    url = _db(tmp_path, hit_n=200 * 168)
    env = {"RAGPULSE_DATABASE__URL": url}
    done = ragpulse("plan", "--detect", "10%", "--within", "3h", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert "To page on a 10.0% drop within 3h" in done.stdout
    assert any(line.startswith("faithfulness") for line in done.stdout.splitlines())
    bad = ragpulse("plan", "--detect", "150%", cwd=tmp_path, env=env)
    assert bad.returncode == 2 and "between 0 and 100%" in bad.stderr


def _history(url: str, span: timedelta, count: int = 20) -> None:
    """Per-trace outcomes of job "j" (the rows' job) spread over the `span` before NOW."""
    engine = make_engine(url)
    with make_session_factory(engine)() as session:
        for i in range(count):
            ts = NOW - span + span * i / count
            session.add(
                JobOutcome(job="j", trace_id=f"h{i}", trace_updated_at=ts, ts=ts, outcomes={})
            )
        session.commit()
    engine.dispose()


def test_minutes_of_history_are_not_extrapolated(tmp_path: Path) -> None:
    # a fresh store: 134 traces in 4 minutes behind the "7d" value. Read as a week's
    # worth, that was 0.8 traces an hour and "pages on 458.7%"
    url = _db(tmp_path, hit_n=134)
    _history(url, timedelta(minutes=4, seconds=30))
    rows = _plan(url, 0.1, 3600.0)
    row = rows[("hit_rate@1", "")]
    assert row.per_hour is None and row.detectable is None
    assert row.note == "4 min of history; the 7d volume needs ≥ 1h"
    assert row.needed_per_hour is not None  # what a target needs does not hang on volume
    env = {"RAGPULSE_DATABASE__URL": url}
    done = ragpulse("plan", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("4 min of history; the 7d volume needs ≥ 1h")
    assert not _over_100(done.stdout)


def test_hours_of_history_give_the_hourly_volume(tmp_path: Path) -> None:
    url = _db(tmp_path, hit_n=600)
    _history(url, timedelta(hours=3))
    row = _plan(url, 0.2, 3600.0)[("hit_rate@1", "")]
    assert row.per_hour == pytest.approx(200.0)  # 600 in 3 hours, not 600 / 168
    assert row.note is None and 0 < row.detectable < 1
    assert row.history_s == pytest.approx(3 * 3600.0)
    done = ragpulse("plan", cwd=tmp_path, env={"RAGPULSE_DATABASE__URL": url})
    assert "volumes per hour over the 3h of history" in done.stdout.splitlines()[0]


def test_a_drop_over_100_percent_is_never_printed(tmp_path: Path) -> None:
    # a week of history, but few traces: no drop a share can make is paged within the hour
    url = _db(tmp_path, hit_n=134)
    _history(url, timedelta(days=7))
    row = _plan(url, 0.1, 3600.0)[("hit_rate@1", "")]
    assert row.per_hour == pytest.approx(134 / 168)
    assert row.detectable is None and row.note == NOT_DETECTABLE
    done = ragpulse("plan", cwd=tmp_path, env={"RAGPULSE_DATABASE__URL": url})
    assert done.returncode == 0, done.stderr
    line = next(s for s in done.stdout.splitlines() if s.startswith("hit_rate@1 "))
    assert line.split()[3] == "none"
    assert not _over_100(done.stdout)


def _over_100(table: str) -> list[str]:
    """The 'pages on' cells of the table over 100%."""
    rows = [line.split() for line in table.splitlines() if line[:1].islower()]
    cells = [r[3] for r in rows if len(r) > 4 and r[0] != "metric"]
    assert cells
    return [c for c in cells if c.endswith("%") and float(c[:-1]) > 100]


def test_session_metrics_are_planned_and_their_judge_rate_is_of_conversations(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    upgrade(url)
    engine = make_engine(url)
    with make_session_factory(engine)() as session:
        rows = [
            _row("session_resolved", 0.7, 50 * 168, ci=0.004),  # 50 closed an hour
            _row("session_completeness", 0.8, 5 * 168, ci=0.03),  # 5 judged an hour
        ]
        for r in rows:
            r.job = "sessions"
        session.add_all(rows)
        session.commit()
    engine.dispose()
    planned = _plan(url, 0.2, 3 * 3600.0)
    resolved = planned[("session_resolved", "")]
    assert not resolved.judged and resolved.per_hour == pytest.approx(50.0)
    assert resolved.detectable is not None and resolved.judge_rate is None
    judged = planned[("session_completeness", "")]
    assert judged.judged and judged.per_hour == pytest.approx(5.0)
    # sessions.judge_rate (10% by default), not sampling.judge (5%), gives the 5 an hour
    rate = load_settings().sessions.judge_rate
    assert judged.judge_rate == pytest.approx(rate * judged.needed_per_hour / 5.0)
