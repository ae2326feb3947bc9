"""Jobs worker memory vs stored outcomes (issue 31): peak RSS of `ragpulse jobs run` as
the number of stored per-trace outcomes grows, for the code of one or more revisions.

For each revision (`--rev`, repeatable; default the checkout this file is in) and each
size N (`--sizes`): a fresh PostgreSQL database (`ragpulse_bench_mem`, dropped after)
migrated with that revision's `ragpulse migrate`, then seeded (`jobs_memory_seed.py`)
with N traces over the last 7 days and their N stored outcomes of `--job` (default `ux`;
`retrieval_health` has no model), evaluated up to the newest. Then, each run a fresh
`python -m ragpulse` process with PYTHONPATH at the revision's code (the same venv):

- first start: `ragpulse jobs run JOB` on the seeded database (whatever the revision does
  the first time it meets stored outcomes: load them, or build what it keeps instead);
- restart: the same again, nothing new: a restarted worker's first run;
- incremental: `--new` traces added (1,000: what the UX job encodes stays small), then
  the same again, which must score exactly those;
- scrape: `ragpulse run --role exporter` started, the time until its `/metrics` has the
  job's series, then the median of 5 scrapes. Today the exporter renders the stored
  results (`metric_results`) and never reads outcome rows; measured anyway, so a design
  that reads aggregates on scrape is measured the same way.

Each job run's peak RSS is the child's own `ru_maxrss` (`os.wait4`: exact, no polling),
its wall time the process's (imports and model load included) beside the job's own time
from `--json`. Every run writes the windows (`scheduler.interval_s=1`: the aggregation is
always due), and the 7-day overall sample count in `metric_results` after each run is
checked against the rows it must count, so a revision that ignored the stored outcomes
would fail instead of looking cheap. The slope of peak RSS over N (least squares, bytes a
stored row) and its projection to 100M traces a day for 7 days are printed per revision.

    PYTHONPATH=$PWD .venv/bin/python -m benchmarks.jobs_memory \
        [--sizes 250000 1000000 4000000] [--rev main --rev HEAD] [--job ux] [--new 1000]
        [--json FILE]     # and later: --report FILE... (the table of several runs)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from benchmarks.jobs_memory_report import Point, Run, load_points, print_report
from benchmarks.jobs_memory_scrape import scrape
from benchmarks.jobs_memory_seed import OUTCOMES, add_new, seed

DB = "ragpulse_bench_mem"
REPO = Path(__file__).resolve().parent.parent
DEFAULT_SIZES = (250_000, 1_000_000, 4_000_000)


@dataclass
class Code:
    """The code a measurement runs: a label and the directory put on PYTHONPATH."""

    label: str
    path: Path
    worktree: bool = False
    env: dict[str, str] = field(default_factory=dict)


def checkout(rev: str | None, into: Path) -> Code:
    """The code of `rev` in a temporary detached worktree (None: this checkout as it is)."""
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", rev or "HEAD"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    if rev is None:
        return Code(f"working tree ({commit})", REPO)
    path = into / f"rev-{commit}"
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", str(path), rev],
        check=True,
        capture_output=True,
    )
    return Code(f"{rev} ({commit})", path, worktree=True)


def remove(code: Code) -> None:
    if code.worktree:
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "remove", "--force", str(code.path)],
            check=False,
            capture_output=True,
        )


def child_env(code: Code, url: str, port: int = 0) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPULSE_")}
    env.update(
        PYTHONPATH=str(code.path),
        RAGPULSE_DATABASE__URL=url,
        RAGPULSE_SCHEDULER__INTERVAL_S="1",
        RAGPULSE_EXPORTER__PORT=str(port),
    )
    return env


def run_job(code: Code, url: str, job: str, log: Path) -> Run:
    """`ragpulse jobs run JOB --json` in a fresh process: its wall time and peak RSS."""
    cmd = [sys.executable, "-m", "ragpulse", "jobs", "run", job, "--json"]
    with open(log, "ab") as err, tempfile.TemporaryDirectory() as cwd:
        started = time.perf_counter()
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=child_env(code, url), stdout=subprocess.PIPE, stderr=err
        )
        out = proc.stdout.read() if proc.stdout is not None else b""
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}; see {log}")
    report = json.loads(out)[0]
    return Run(
        wall_s=wall,
        job_s=float(report["seconds"]),
        rss_mb=usage.ru_maxrss / 1024,  # KiB on Linux
        new=int(report["new_traces"]),
        results=int(report["results"]),
    )


def counted(engine: Engine, job: str, metric: str) -> int:
    """The newest 7-day overall sample count of `metric` (scores, skips and errors)."""
    with engine.connect() as conn:
        row = conn.execute(
            text(
                "SELECT n + skipped + errors FROM metric_results WHERE job = :job "
                "AND metric = :metric AND \"window\" = '7d' AND group_key = '' "
                "ORDER BY computed_at DESC, id DESC LIMIT 1"
            ),
            {"job": job, "metric": metric},
        ).first()
    return -1 if row is None else int(row[0])


def measure(code: Code, admin: Engine, base: str, args: argparse.Namespace, rows: int) -> Point:
    """One revision at one size, on a database of its own."""
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{args.db}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{args.db}"'))
    url = make_url(base).set(database=args.db).render_as_string(hide_password=False)
    log = args.logs / f"{code.path.name}-{rows}.log"
    subprocess.run(
        [sys.executable, "-m", "ragpulse", "migrate"],
        check=True,
        env=child_env(code, url),
        cwd=tempfile.gettempdir(),
        capture_output=True,
    )
    engine = create_engine(url)
    try:
        end = datetime.now(UTC) - timedelta(minutes=2)
        started = time.perf_counter()
        seed(engine, args.job, rows, end)
        seed_s = time.perf_counter() - started
        metric = args.count_metric
        runs = {}
        for phase in ("first_start", "restart", "incremental"):
            expected_new = 0
            if phase == "incremental":
                add_new(engine, args.new, end, datetime.now(UTC))
                expected_new = args.new
            run = run_job(code, url, args.job, log)
            run.counted = counted(engine, args.job, metric)
            expected = rows + expected_new
            if run.new != expected_new or run.counted != expected:
                raise RuntimeError(
                    f"{code.label}, {rows:,} rows, {phase}: scored {run.new} (expected "
                    f"{expected_new}), 7d {metric} counts {run.counted:,} (expected "
                    f"{expected:,}); see {log}"
                )
            runs[phase] = run
            print(f"  {code.label} {rows:>10,} {phase:12s} {run.line()}", flush=True)
        ready_s, scrape_ms, exporter_mb = (
            scrape(lambda port: child_env(code, url, port), metric, rows + args.new, log)
            if args.scrape
            else (0.0, 0.0, 0.0)
        )
    finally:
        engine.dispose()
        if not args.keep:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{args.db}" WITH (FORCE)'))
    return Point(code.label, rows, seed_s, runs, ready_s, scrape_ms, exporter_mb)


def main(argv: list[str] | None = None) -> list[Point]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(DEFAULT_SIZES))
    parser.add_argument("--ten-million", action="store_true", help="add a 10M size")
    parser.add_argument(
        "--rev",
        action="append",
        default=[],
        help="git revision to measure (repeatable; default: this checkout's working tree)",
    )
    parser.add_argument("--job", default="ux", choices=sorted(OUTCOMES))
    parser.add_argument("--new", type=int, default=1000, help="traces the incremental run scores")
    parser.add_argument("--no-scrape", dest="scrape", action="store_false")
    parser.add_argument("--url", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    parser.add_argument("--db", default=DB, help=f"the database made and dropped (default {DB})")
    parser.add_argument("--keep", action="store_true", help="keep the last database")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    parser.add_argument("--logs", type=Path, help="the children's stderr (default: a temp dir)")
    parser.add_argument(
        "--report",
        type=Path,
        nargs="+",
        metavar="JSON",
        help="measure nothing: print the table and slopes of earlier runs' --json files",
    )
    args = parser.parse_args(argv)
    if args.report:
        earlier = load_points(args.report)
        print_report(earlier, args.job, args.new)
        return earlier
    args.count_metric = (
        "retrieval_empty_rate" if args.job == "retrieval_health" else ("cache_hit_rate_actual")
    )
    sizes = sorted(set(args.sizes + ([10_000_000] if args.ten_million else [])))
    points: list[Point] = []
    admin = create_engine(args.url, isolation_level="AUTOCOMMIT")
    with tempfile.TemporaryDirectory(prefix="jobs-memory-") as tmp:
        args.logs = args.logs or Path(tmp)
        args.logs.mkdir(parents=True, exist_ok=True)
        codes = [checkout(rev, Path(tmp)) for rev in args.rev] or [checkout(None, Path(tmp))]
        try:
            # sizes outer, revisions inner: each size's revisions run back to back, at
            # the same load of the shared machine
            for rows in sizes:
                for code in codes:
                    points.append(measure(code, admin, args.url, args, rows))
        finally:
            for code in codes:
                remove(code)
            admin.dispose()
    print_report(points, args.job, args.new)
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(p) for p in points], indent=1))
    return points


if __name__ == "__main__":
    main()
