"""The back-fill speed benchmark (issue 31 part 3) keeps working: a tiny run through the CLI
seeds the traffic, back-fills it, splits the time into scoring and steps from the progress
bar, checks the count the newest step wrote, and leaves no database behind."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import create_engine, text

from benchmarks.backfill_speed import main
from tests.fixtures.db import postgres_admin_url


def _databases(name: str) -> int:
    engine = create_engine(postgres_admin_url())
    try:
        with engine.connect() as conn:
            return int(
                conn.execute(
                    text("SELECT count(*) FROM pg_database WHERE datname = :n"), {"n": name}
                ).scalar_one()
            )
    finally:
        engine.dispose()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_tiny_backfill_is_measured_in_both_phases(capsys: pytest.CaptureFixture[str]) -> None:
    db = f"ragpulse_bench_backfill_{uuid.uuid4().hex[:12]}"
    argv = ["--days", "0.5", "--rate", "100", "--since", "3h", "--step", "1h"]
    [result] = main([*argv, "--db", db, "--url", postgres_admin_url()])
    assert result.traces == 1200
    assert result.scored == 1200  # no outcomes were seeded: the back-fill scored them all
    assert result.steps == 4 and result.results > 0
    # the newest step's 7-day count is the traces up to it (main raises otherwise)
    assert 0 < result.counted <= 1200
    # the scoring phase is timed by this process from the bar's lines on a pipe, the job by
    # the child: on a loaded machine a line arrives late (0.7046 s of scoring in a 0.7 s job)
    assert 0 < result.scoring_s < result.job_s + 0.25
    assert result.job_s < result.wall_s
    assert result.steps_s > 0
    assert 50 < result.rss_mb < 4000  # a Python process with the jobs imported
    out = capsys.readouterr().out
    assert "| working tree (" in out and "| 1,200 | 1,200 |" in out and " 4 in " in out
    assert _databases(db) == 0  # dropped
