"""The jobs-memory benchmark (issue 31 part 4) keeps working: a tiny run of a git revision
through the CLI measures every phase, checks the counts the job exported, and leaves no
database or worktree behind; and the slope is a least-squares fit of peak RSS over rows.

The tiny run measures `retrieval_health` (no model: ~40 s here against ~150 s for the
benchmark's default `ux`, which loads and runs the embedder in three processes); the
harness, the CLI runs, the checks and the scrape are the same for both."""

from __future__ import annotations

import json
import subprocess
import uuid
from dataclasses import asdict
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from benchmarks.jobs_memory import REPO, main
from benchmarks.jobs_memory_report import PHASES, Point, Run, slope
from tests.fixtures.db import postgres_admin_url


def _point(rows: int, rss_mb: float) -> Point:
    run = Run(wall_s=1.0, job_s=0.5, rss_mb=rss_mb, new=0, results=1)
    return Point("r", rows, 0.0, dict.fromkeys(PHASES, run), 0.0, 0.0, 0.0)


def test_slope_is_the_least_squares_fit_of_peak_rss_over_rows() -> None:
    # 100 MB + 1,000 bytes a row, and a point 1 MB above the line in the middle
    points = [_point(n, 100 + n * 1000 / 2**20) for n in (0, 1_000_000, 2_000_000)]
    points[1].runs = {p: Run(1.0, 0.5, points[1].runs[p].rss_mb + 1, 0, 1) for p in PHASES}
    fit = slope(points, "restart")
    assert fit is not None
    per_row, intercept = fit
    assert per_row == pytest.approx(1000.0)
    assert intercept / 2**20 == pytest.approx(100 + 1 / 3)
    assert slope(points[:1], "restart") is None  # one size: no slope


def test_report_reads_back_the_json_of_earlier_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = [_point(n, 100 + n / 2**20) for n in (250_000, 1_000_000)]
    big = [_point(4_000_000, 100 + 4_000_000 / 2**20)]
    files = []
    for name, points in (("small", small), ("big", big)):
        files.append(tmp_path / f"{name}.json")
        files[-1].write_text(json.dumps([asdict(p) for p in points]))
    assert main(["--report", *map(str, files)]) == small + big
    out = capsys.readouterr().out
    assert "| r | 4,000,000 |" in out
    assert "r restart     : 1 bytes of peak RSS per stored row (+ 100 MB)" in out


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


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(REPO), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def _head_worktrees() -> list[str]:
    """The benchmark's temporary worktrees of HEAD (other revisions' may be in use)."""
    head = _git("rev-parse", "--short", "HEAD")
    return [
        line
        for line in _git("worktree", "list").splitlines()
        if "/jobs-memory-" in line and f"/rev-{head} " in line
    ]


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_a_tiny_run_of_a_revision_measures_every_phase(capsys: pytest.CaptureFixture[str]) -> None:
    db = f"ragpulse_bench_mem_{uuid.uuid4().hex[:12]}"
    points = main(
        [
            "--sizes",
            "2000",
            "--rev",
            "HEAD",
            "--new",
            "30",
            "--db",
            db,
            "--url",
            postgres_admin_url(),
        ]
    )
    [point] = points
    assert point.rows == 2000 and point.rev.startswith("HEAD (")
    runs = point.runs
    # the stored outcomes were counted (main raises otherwise): here, as the table shows
    assert [runs[p].new for p in PHASES] == [0, 0, 30]
    assert [runs[p].counted for p in PHASES] == [2000, 2000, 2030]
    for phase in PHASES:
        assert runs[phase].results > 0
        assert 50 < runs[phase].rss_mb < 4000  # a Python process with the jobs imported
        assert runs[phase].wall_s >= runs[phase].job_s > 0
    assert point.exporter_ready_s > 0 and point.scrape_ms > 0 and point.exporter_rss_mb > 50
    out = capsys.readouterr().out
    assert "| HEAD (" in out and "| 2,000 |" in out and "one size only, no slope" in out
    assert _databases(db) == 0  # dropped
    assert _head_worktrees() == []  # the revision's worktree removed
