"""The figures of `jobs_memory.py` and their table: per revision and size, each run's peak
RSS and times, and per revision the least-squares slope of peak RSS over stored rows with
its projection to 100M traces a day kept 7 days."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

PROJECTED_ROWS = 100_000_000 * 7
"""The 7-day window at 100M traces a day (issue 31's target scale)."""
PHASES = ("first_start", "restart", "incremental")


@dataclass
class Run:
    """One `ragpulse jobs run` process."""

    wall_s: float
    job_s: float
    rss_mb: float
    new: int
    results: int
    counted: int = -1
    """The 7-day overall sample count in metric_results after the run."""

    def line(self) -> str:
        return (
            f"peak RSS {self.rss_mb:7.0f} MB  wall {self.wall_s:6.1f} s  job {self.job_s:6.1f} s"
            f"  new {self.new:5d}  results {self.results:4d}  7d n {self.counted:,}"
        )


@dataclass
class Point:
    """One revision at one size."""

    rev: str
    rows: int
    seed_s: float
    runs: dict[str, Run]
    exporter_ready_s: float
    scrape_ms: float
    exporter_rss_mb: float


def load_points(paths: list[Path]) -> list[Point]:
    """Points written by earlier runs' `--json`, e.g. a 10M size measured on its own."""
    points = []
    for path in paths:
        for raw in json.loads(path.read_text()):
            runs = {phase: Run(**run) for phase, run in raw.pop("runs").items()}
            points.append(Point(runs=runs, **raw))
    return sorted(points, key=lambda p: (p.rows, p.rev))


def slope(points: list[Point], phase: str) -> tuple[float, float] | None:
    """(bytes of peak RSS per stored row, intercept in bytes) by least squares over the
    sizes; None with fewer than two sizes."""
    if len({p.rows for p in points}) < 2:
        return None
    rows = np.array([p.rows for p in points], dtype=np.float64)
    rss = np.array([p.runs[phase].rss_mb * 2**20 for p in points], dtype=np.float64)
    per_row, intercept = np.polyfit(rows, rss, 1)
    return float(per_row), float(intercept)


def print_report(points: list[Point], job: str, new: int) -> None:
    """A Markdown table (as RESULTS.md takes it) and the slopes per revision."""
    print(f"\njob `{job}`; peak RSS (MB) / wall time of the process (s) / the job's own (s)")
    print(
        "| revision | stored rows | first start | restart | incremental "
        f"(+{new:,}) | exporter ready / scrape | seed |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for p in points:
        cells = [
            f"{p.runs[x].rss_mb:,.0f} MB / {p.runs[x].wall_s:.1f} s / {p.runs[x].job_s:.1f} s"
            for x in PHASES
        ]
        scrape = (
            f"{p.exporter_ready_s:.1f} s / {p.scrape_ms:.1f} ms ({p.exporter_rss_mb:.0f} MB)"
            if p.exporter_ready_s
            else "-"
        )
        print(f"| {p.rev} | {p.rows:,} | {' | '.join(cells)} | {scrape} | {p.seed_s:.0f} s |")
    print()
    for rev in dict.fromkeys(p.rev for p in points):
        mine = [p for p in points if p.rev == rev]
        for phase in PHASES:
            fit = slope(mine, phase)
            if fit is None:
                print(f"{rev}: one size only, no slope")
                break
            per_row, intercept = fit
            projected = (intercept + per_row * PROJECTED_ROWS) / 2**30
            print(
                f"{rev} {phase:12s}: {per_row:,.0f} bytes of peak RSS per stored row "
                f"(+ {intercept / 2**20:,.0f} MB); at 100M traces/day x 7 d "
                f"({PROJECTED_ROWS / 1e6:,.0f}M rows): {projected:,.1f} GiB"
            )
