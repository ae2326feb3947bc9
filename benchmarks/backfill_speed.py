"""Back-fill speed (issue 31 part 3): `ragpulse jobs backfill real_users_benchmark --since 7d
--step 10m` over days of traffic, for the code of one or more revisions.

Issue 31 measured today's design as an operator would: 15 days of traffic at 1,200 traces
an hour with `sampling.real_users_benchmark=1`, then the back-fill: 530-600 s (115-160 s
scoring the traces, then 1,009 steps at ~0.4 s each recomputed from rows), 1.6 GB RSS. The
bucket design's target is <= 60 s on the same traffic.

For each revision (`--rev`, repeatable; default this checkout) a fresh PostgreSQL
database (`ragpulse_bench_backfill`, dropped after) migrated by that revision's
`ragpulse migrate` is seeded server-side (generate_series, like `jobs_memory_seed.py`)
with `--days` of traces at `--rate` an hour before now, every one sampled for the
real-users benchmark (a `samples` row: what ingest writes at sampling 1), ten contexts
each and one or two relevant ids (the ground truth), tenant/version tags. No outcomes are
seeded: the back-fill scores every trace itself, as on a new install, so its time has
both phases of the issue's figure. Then one fresh `python -m ragpulse jobs backfill`
process with PYTHONPATH at the revision's code (the shared venv):

- scoring: from the progress bar's first line (0 steps, printed just before the job's
  back-fill starts) to its first step (loading and scoring the traces, reading what the
  steps start from, and one step), timed as the child's stderr arrives;
- steps: from that first step to the end of the job's own time (the CLI's `...s`), and
  the steps a second;
- the wall time of the process and its peak RSS (`os.wait4`'s `ru_maxrss`, exact).

The newest step's 7-day overall sample count of `hit_rate@1` in `metric_results` is
checked against the seeded traces in that window, so a revision that skipped the traces
would fail instead of looking fast.

    PYTHONPATH=$PWD .venv/bin/python -m benchmarks.backfill_speed \
        [--rev 8df7bde --rev buckets] [--days 15] [--rate 1200] [--since 7d] [--step 10m] \
        [--workers N]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from benchmarks.jobs_memory import Code, checkout, child_env, remove
from benchmarks.jobs_memory_seed import fill_keys, make_partitions, user_triggers

DB = "ragpulse_bench_backfill"
JOB = "real_users_benchmark"
CHUNK = 500_000

TRACES = """
INSERT INTO traces (trace_id, timestamp, received_at, updated_at, source, question, answer,
                    contexts, relevant_ids, session_id, model, latency_ms, tags)
SELECT 'bf-' || g, ts, ts, ts, 'json', 'How do I renew my badge, question ' || (g % 2000),
       'At the front desk.',
       (SELECT json_agg(json_build_object('id', 'd' || k, 'score', 1.0 - k / 10.0))
        FROM generate_series(0, 9) AS k),
       CASE WHEN g % 3 = 0
            THEN jsonb_build_array('d' || (g * 7) % 13, 'd' || (g * 11) % 17)
            ELSE jsonb_build_array('d' || (g * 7) % 13) END,
       'session-' || (g / 4), 'gpt-4o-mini', 800 + g % 1500,
       jsonb_build_object('tenant', CASE WHEN g % 10 < 6 THEN 'acme' ELSE 'globex' END,
                          'version', 'v' || (1 + (2 * g) / (CAST(:rows AS bigint) + 1)))
FROM (SELECT g, CAST(:start AS timestamptz)
                + (g::float8 / CAST(:rows AS bigint)) * CAST(:span AS float8)
                  * interval '1 second' AS ts
      FROM generate_series(CAST(:lo AS bigint), CAST(:hi AS bigint)) AS g) AS s
"""
"""Relevant ids 'd0'..'d16' against contexts 'd0'..'d9': some hit at every rank, some miss."""

DONE = re.compile(rf"^{JOB}\s+ok\s+steps=(\d+)\s+results=(\d+)\s+scored=(\d+)\s+([\d.]+)s", re.M)
BAR = re.compile(rb"\|\s*(\d+)/(\d+) \[")


@dataclass
class Backfill:
    """One `ragpulse jobs backfill` process of one revision."""

    rev: str
    traces: int
    steps: int
    results: int
    scored: int
    job_s: float
    scoring_s: float
    wall_s: float
    rss_mb: float
    counted: int = -1

    @property
    def steps_s(self) -> float:
        return self.job_s - self.scoring_s

    def line(self) -> str:
        rate = self.steps / self.steps_s if self.steps_s > 0 else 0.0
        return (
            f"| {self.rev} | {self.traces:,} | {self.scored:,} | {self.scoring_s:.1f} s | "
            f"{self.steps:,} in {self.steps_s:.1f} s ({rate:.1f}/s) | {self.job_s:.1f} s | "
            f"{self.wall_s:.1f} s | {self.rss_mb:,.0f} MB |"
        )


def seed(engine: Engine, days: float, rate: int, end: datetime) -> int:
    """`days` of traffic at `rate` traces an hour before `end`, all sampled for the job."""
    rows = int(days * 24 * rate)
    span = timedelta(days=days)
    with engine.begin() as conn:
        make_partitions(conn, end - span, end)
        user_triggers(conn, enable=False)
    for lo in range(1, rows + 1, CHUNK):
        with engine.begin() as conn:
            conn.execute(
                text(TRACES),
                {
                    "start": end - span,
                    "span": span.total_seconds(),
                    "rows": rows,
                    "lo": lo,
                    "hi": min(rows, lo + CHUNK - 1),
                },
            )
    with engine.begin() as conn:
        fill_keys(conn, "bf-")
        user_triggers(conn, enable=True)
        conn.execute(
            text(
                "INSERT INTO samples (trace_id, purpose, sampled_at) "
                "SELECT trace_id, :job, received_at FROM traces"
            ),
            {"job": JOB},
        )
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("VACUUM ANALYZE"))
    return rows


def _watch(stream: IO[bytes], log: IO[bytes], marks: dict[str, float]) -> None:
    """Copy the child's stderr to `log`, timing the bar's first line and first step."""
    tail = b""
    while chunk := os.read(stream.fileno(), 4096):
        now = time.perf_counter()
        log.write(chunk)
        for match in BAR.finditer(tail + chunk):
            marks.setdefault("bar" if int(match[1]) == 0 else "first_step", now)
        tail = chunk[-32:]  # a bar line cut between two reads


def run_backfill(code: Code, url: str, args: argparse.Namespace, log: Path) -> Backfill:
    cmd = [sys.executable, "-m", "ragpulse", "jobs", "backfill", JOB]
    cmd += ["--since", args.since, "--step", args.step]
    if args.workers is not None:  # revisions before --workers existed take none
        cmd += ["--workers", str(args.workers)]
    marks: dict[str, float] = {}
    with open(log, "ab") as err, tempfile.TemporaryDirectory() as cwd:
        started = time.perf_counter()
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=child_env(code, url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        if proc.stderr is None or proc.stdout is None:
            raise RuntimeError("the child's output is not piped")
        watcher = threading.Thread(target=_watch, args=(proc.stderr, err, marks), daemon=True)
        watcher.start()
        out = proc.stdout.read().decode()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        watcher.join()
    done = DONE.search(out)
    if os.waitstatus_to_exitcode(status) != 0 or done is None:
        raise RuntimeError(f"{' '.join(cmd)} failed: {out!r}; see {log}")
    if "bar" not in marks or "first_step" not in marks:
        raise RuntimeError(f"no progress bar with a first step in {log}")
    return Backfill(
        rev=code.label,
        traces=0,
        steps=int(done[1]),
        results=int(done[2]),
        scored=int(done[3]),
        job_s=float(done[4]),
        scoring_s=marks["first_step"] - marks["bar"],
        wall_s=wall,
        rss_mb=usage.ru_maxrss / 1024,  # KiB on Linux
    )


def check(engine: Engine, result: Backfill) -> None:
    """The newest step's 7-day overall count of hit_rate@1 is the seeded traces in it."""
    with engine.connect() as conn:
        row = conn.execute(
            text(
                "SELECT computed_at, n + skipped + errors FROM metric_results WHERE job = :job "
                "AND metric = 'hit_rate@1' AND \"window\" = '7d' AND group_key = '' "
                "ORDER BY computed_at DESC LIMIT 1"
            ),
            {"job": JOB},
        ).one()
        at, result.counted = row[0], int(row[1])
        inside = {
            int(
                conn.execute(
                    text(
                        f"SELECT count(*) FROM traces WHERE timestamp {lo} :s AND timestamp <= :e"
                    ),
                    {"s": at - timedelta(days=7), "e": at},
                ).scalar_one()
            )
            for lo in (">", ">=")
        }
    if result.counted not in inside:
        raise RuntimeError(f"{result.rev}: 7d hit_rate@1 counts {result.counted:,}, not {inside}")


def measure(code: Code, admin: Engine, args: argparse.Namespace) -> Backfill:
    """One revision on a database of its own."""
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{args.db}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{args.db}"'))
    url = make_url(args.url).set(database=args.db).render_as_string(hide_password=False)
    subprocess.run(
        [sys.executable, "-m", "ragpulse", "migrate"],
        check=True,
        env=child_env(code, url),
        cwd=tempfile.gettempdir(),
        capture_output=True,
    )
    engine = create_engine(url)
    try:
        started = time.perf_counter()
        rows = seed(engine, args.days, args.rate, datetime.now(UTC) - timedelta(minutes=1))
        print(f"  {code.label}: {rows:,} traces seeded in {time.perf_counter() - started:.0f} s")
        result = run_backfill(code, url, args, args.logs / f"{code.path.name}.log")
        result.traces = rows
        check(engine, result)
    finally:
        engine.dispose()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{args.db}" WITH (FORCE)'))
    print(f"  {result.line()}  7d n {result.counted:,}", flush=True)
    return result


def main(argv: list[str] | None = None) -> list[Backfill]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", action="append", default=[], help="git revision (repeatable)")
    parser.add_argument("--days", type=float, default=15.0, help="days of traffic (default 15)")
    parser.add_argument("--rate", type=int, default=1200, help="traces an hour (default 1200)")
    parser.add_argument("--since", default="7d")
    parser.add_argument("--step", default="10m")
    parser.add_argument(
        "--workers", type=int, help="passed to the back-fill (default: none, its own default)"
    )
    parser.add_argument("--url", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    parser.add_argument("--db", default=DB, help=f"the database made and dropped (default {DB})")
    parser.add_argument("--logs", type=Path, help="the children's stderr (default: a temp dir)")
    args = parser.parse_args(argv)
    results = []
    admin = create_engine(args.url, isolation_level="AUTOCOMMIT")
    with tempfile.TemporaryDirectory(prefix="backfill-speed-") as tmp:
        args.logs = args.logs or Path(tmp)
        args.logs.mkdir(parents=True, exist_ok=True)
        codes = [checkout(rev, Path(tmp)) for rev in args.rev] or [checkout(None, Path(tmp))]
        try:
            for code in codes:
                results.append(measure(code, admin, args))
        finally:
            for code in codes:
                remove(code)
            admin.dispose()
    print(
        f"\n{args.days:g} days at {args.rate:,} traces/h, --since {args.since} --step {args.step}"
        "\n\n| revision | traces | scored | scoring | steps | job | process wall | peak RSS |"
        "\n|---|---:|---:|---:|---:|---:|---:|---:|"
    )
    for result in results:
        print(result.line())
    return results


if __name__ == "__main__":
    main()
