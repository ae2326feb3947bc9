"""Behaviour preservation: the exported series of a recorded traffic file, value for value.

A refactoring that moves code (issue 40's reorganisation of `collector/jobs/`) must not move
any exported value. This benchmark replays one recorded traffic file through the product's
own entry points and dumps what Prometheus would get:

1. the traffic: the demo's generator (`ragpulse.demo.traffic.generate_round`, three tenants,
   sessions, ground truth, the production judge's decisions and labels, feedback, OTLP
   spans) over `--days` days ending at a fixed time, written as a JSONL file of Kafka
   messages (or read from `--traffic`);
2. day by day: the day's messages through the ingest (`Ingestor.ingest_batch`, a fresh
   SQLite database), then every job through the service's runner (`Monitoring`, as
   `ragpulse run` wires it) at the end of the day, at that fixed time;
3. a back-fill of every per-trace job over the whole span at `--step` (what
   `ragpulse jobs backfill --output` writes, its OpenMetrics lines);
4. the exporter's full `/metrics` exposition, scraped over HTTP;
5. in a revision with job-level switches between rows and sums (`SMALL_WINDOW_TRACES`,
   `DRIFT_ROWS_MAX`), all of it twice: as the code chooses (windows this small: from their
   rows), and with every window and detector from the bucket sums (the switches set to 0,
   as the tests did), so both paths are compared; without them, once.

The dump holds each pass's log, /metrics and back-fill lines, sorted; values that are
wall-clock readings (run durations, process and runtime metrics, "last success" timestamps,
`_created` samples) are masked as `<t>`, so two runs of one revision give the same bytes
(`tests/benchmarks/test_exported_series.py`).

    python -m benchmarks.exported_series --out /tmp/series.txt
    python -m benchmarks.exported_series --compare main reorg   # exit 1 on any difference

`--compare REV_A REV_B` writes the traffic once, checks both revisions out in temporary git
worktrees, runs this file (the current one, copied in: it imports nothing whose module path
the reorganisation moves) in each on the same traffic, and prints every differing line.
"""

from __future__ import annotations

import argparse
import base64
import difflib
import importlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ANCHOR = datetime(2026, 11, 2, tzinfo=UTC)  # the end of the traffic and the last run
MASK = "<t>"
# wall-clock readings: never equal between two runs, so masked (the series still compared)
VOLATILE = re.compile(
    r"^(process_|python_gc_)|_created[{ ]|^ragpulse_job_duration_seconds|_last_success_timestamp"
)
# Module paths as parts, joined at run time: the reorganisation script rewrites dotted
# names in the source, and this file must import on the old layout and on the new one.
BACKFILL_MODULES = (("collector", "jobs", "backfill", "runner"), ("collector", "jobs", "backfill"))
# the job-level switches between the rows and the sums (issue 40 replaces them per series)
SUMS_SWITCHES: tuple[tuple[tuple[tuple[str, ...], ...], str, int], ...] = (
    (
        (
            ("collector", "jobs", "buckets", "bucket_aggregation"),
            ("collector", "jobs", "bucket_aggregation"),
        ),
        "SMALL_WINDOW_TRACES",
        0,
    ),
    (
        (("collector", "jobs", "drift", "source"), ("collector", "jobs", "bucket_drift")),
        "DRIFT_ROWS_MAX",
        0,
    ),
)


class CompareError(RuntimeError):
    """A revision could not be checked out or its dump failed."""


def _first_module(candidates: Sequence[Sequence[str]], attribute: str) -> ModuleType | None:
    """The first of `candidates` that exists and has `attribute`."""
    for parts in candidates:
        name = ".".join(parts)
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is None or not name.startswith(exc.name):
                raise  # a module it imports is missing, not this layout's path
            continue
        if hasattr(module, attribute):
            return module
    return None


# ---------------------------------------------------------------------------------------
# the traffic file


def write_traffic(path: Path, days: int, rounds_per_day: int, seed: int) -> int:
    """The demo's traffic over `days` days ending at ANCHOR as JSONL lines of Kafka
    messages: {"day", "topic", "key", "value"} (key and value base64). Deterministic."""
    from ragpulse.demo.traffic import generate_round

    every = timedelta(days=1) / rounds_per_day
    start = ANCHOR - timedelta(days=days)
    count = 0
    with path.open("w", encoding="utf-8") as out:
        for round_no in range(days * rounds_per_day):
            at = start + every * (round_no + 1)
            day = round_no // rounds_per_day
            for message in generate_round(round_no, now=at, seed=seed, malformed=False):
                line = {
                    "day": day,
                    "topic": message.topic or "rag.traces",
                    "key": base64.b64encode(message.key).decode() if message.key else None,
                    "value": base64.b64encode(message.value).decode(),
                }
                out.write(json.dumps(line, sort_keys=True) + "\n")
                count += 1
    return count


def read_traffic(path: Path) -> dict[int, list[tuple[str, bytes | None, bytes]]]:
    days: dict[int, list[tuple[str, bytes | None, bytes]]] = {}
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            key = base64.b64decode(record["key"]) if record["key"] else None
            days.setdefault(int(record["day"]), []).append(
                (str(record["topic"]), key, base64.b64decode(record["value"]))
            )
    return days


# ---------------------------------------------------------------------------------------
# one revision's dump


def _settings(database_url: str) -> Any:
    from collector.settings import load_settings
    from ragpulse.commands.demo import demo_settings

    base = load_settings(
        exporter={"port": 0, "host": "127.0.0.1"},
        scheduler={"initial_delay_s": 10**7},  # the runs are this benchmark's, at fixed times
    )
    return demo_settings(base, database_url, "127.0.0.1:1")


def _ingest(settings: Any, engine: Any, messages: list[tuple[str, bytes | None, bytes]]) -> int:
    """The messages through the ingest; then the stored traces' arrival and update times
    are their own timestamps (not this machine's clock), so every run stores the same."""
    from sqlalchemy import update

    from collector.ingest.pipeline import Ingestor, RawMessage
    from collector.store.models import Trace
    from collector.store.session import make_session_factory

    raw = [RawMessage(topic, 0, i, key, value) for i, (topic, key, value) in enumerate(messages)]
    with make_session_factory(engine)() as session:
        Ingestor(settings).ingest_batch(session, raw)
        session.execute(
            update(Trace).values(received_at=Trace.timestamp, updated_at=Trace.timestamp)
        )
        session.commit()
    return len(raw)


def _at(job: Any, now: datetime) -> Callable[[], Any]:
    run = job.run

    def fixed() -> Any:
        return run(now=now)

    return fixed


def _run_jobs(runner: Any, now: datetime) -> list[str]:
    """Every job through the service's runner (its lock, metrics, the exporter's refresh),
    each run at `now` instead of the clock."""
    lines = []
    for name, job in runner.jobs.items():
        saved = job.run
        job.run = _at(job, now)
        try:
            report = runner.run(name)
        finally:
            job.run = saved
        lines.append(f"# run {now:%Y-%m-%dT%H:%M}Z {name} {report.status} {report.new_traces}")
    return lines


def _backfill(settings: Any, engine: Any, span: timedelta, step: timedelta, out: Path) -> list[str]:
    from collector.jobs.scheduler import definitions
    from exporters.openmetrics import OpenMetricsWriter
    from ragpulse.job_setup import job_environment, label_limits

    module = _first_module(BACKFILL_MODULES, "backfill")
    if module is None:
        raise ModuleNotFoundError("no back-fill module with `backfill` in this revision")
    times = module.steps(ANCHOR - span, ANCHOR, step)
    writer = OpenMetricsWriter(out, settings.scheduler.group_labels, label_limits(settings))
    lines = []
    try:
        env = job_environment(settings, engine, judge=None)
        for name, definition in definitions(settings).items():
            report = module.backfill(definition, env, times, emit=writer.add, workers=1)
            lines.append(f"# backfill {name} {report.status} steps={report.steps}")
    finally:
        writer.close()
    return lines


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60) as response:
        body: bytes = response.read()
    return body.decode()


def masked(exposition: str) -> list[str]:
    """The exposition's sample lines, sorted, wall-clock values masked."""
    out = []
    for line in exposition.splitlines():
        if not line or line.startswith("#"):
            continue
        if VOLATILE.search(line):
            head, _, _ = line.rpartition(" ")
            line = f"{head} {MASK}"
        out.append(line)
    return sorted(out)


def replay(traffic: Path, step: timedelta, workdir: Path) -> list[str]:
    """Replay `traffic` in a fresh database under `workdir`: the runs' log, the masked
    /metrics exposition and the back-fill's OpenMetrics samples, each sorted."""
    from prometheus_client import CollectorRegistry

    from collector.store.session import make_engine
    from migrations.runner import upgrade
    from ragpulse.monitoring import Monitoring

    workdir.mkdir(parents=True, exist_ok=True)
    url = f"sqlite:///{workdir / 'series.db'}"
    upgrade(url)
    settings = _settings(url)
    engine = make_engine(url)
    days = read_traffic(traffic)
    log: list[str] = []
    openmetrics = workdir / "backfill.om"
    monitoring = Monitoring(settings, engine, CollectorRegistry()).start()
    try:
        if monitoring.runner is None or monitoring.server is None:
            raise RuntimeError("the monitoring did not start its runner and server")
        first = ANCHOR - timedelta(days=len(days))
        for day in sorted(days):
            log.append(f"# ingest day {day}: {_ingest(settings, engine, days[day])} messages")
            log += _run_jobs(monitoring.runner, first + timedelta(days=day + 1))
        log += _backfill(settings, engine, timedelta(days=len(days)), step, openmetrics)
        log += _run_jobs(monitoring.runner, ANCHOR)
        exposition = _scrape(monitoring.server.port)
    finally:
        monitoring.stop()
        engine.dispose()
    backfilled = [line for line in openmetrics.read_text().splitlines() if not line.startswith("#")]
    return [
        *log,
        "# /metrics",
        *masked(exposition),
        "# backfill (OpenMetrics)",
        *sorted(backfilled),
    ]


@contextmanager
def _from_sums() -> Iterator[list[str]]:
    """Every window and detector from the bucket sums (the path of a busy job), by the
    switches of today's code; a switch this revision lacks is noted on stderr, not in the
    dump, so a revision without job-level switches compares on its own statistics."""
    saved: list[tuple[ModuleType, str, Any]] = []
    missing = []
    for candidates, attribute, value in SUMS_SWITCHES:
        module = _first_module(candidates, attribute)
        if module is None:
            missing.append(attribute)
            continue
        saved.append((module, attribute, getattr(module, attribute)))
        setattr(module, attribute, value)
    try:
        yield missing
    finally:
        for module, attribute, old in saved:
            setattr(module, attribute, old)


def dump(traffic: Path, out: Path, step: timedelta, workdir: Path) -> None:
    """Two replays of `traffic`, as the code chooses its statistics (few traces: from the
    rows) and with every window and detector from the sums, written to `out`."""
    lines = ["# pass: as the code chooses (rows for windows this small)"]
    lines += replay(traffic, step, workdir / "rows")
    with _from_sums() as missing:
        for attribute in missing:
            print(f"note: no {attribute} in this revision", file=sys.stderr)
        if len(missing) < len(SUMS_SWITCHES):  # else one engine: the first pass was it
            lines.append("# pass: windows and detectors from the bucket sums")
            lines += replay(traffic, step, workdir / "sums")
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


# ---------------------------------------------------------------------------------------
# two revisions


def _git(*args: str, cwd: Path = ROOT) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise CompareError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def _dump_at(rev: str, source: bytes, traffic: Path, out: Path, step: str, tmp: Path) -> None:
    tree = tmp / f"tree-{rev.replace('/', '_')}"
    _git("worktree", "add", "--detach", str(tree), rev)
    try:
        runner = tree / "benchmarks" / "_exported_series_copy.py"
        runner.write_bytes(source)
        env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"}
        env["TRANSFORMERS_OFFLINE"] = "1"
        command = [sys.executable, "-m", "benchmarks._exported_series_copy"]
        command += ["--traffic", str(traffic), "--out", str(out), "--step", step]
        started = time.perf_counter()
        done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise CompareError(f"{rev}: the dump failed:\n{done.stdout}{done.stderr}")
        print(f"{rev}: {out} in {time.perf_counter() - started:.0f}s", flush=True)
    finally:
        _git("worktree", "remove", "--force", str(tree))


def compare(rev_a: str, rev_b: str, days: int, rounds_per_day: int, step: str) -> int:
    with tempfile.TemporaryDirectory(prefix="exported-series-") as name:
        tmp = Path(name)
        traffic = tmp / "traffic.jsonl"
        source = Path(__file__).read_bytes()  # the same file in both, whatever happens here
        print(f"traffic: {write_traffic(traffic, days, rounds_per_day, seed=7)} messages")
        dumps = []
        for rev in (rev_a, rev_b):
            out = tmp / f"{rev.replace('/', '_')}.txt"
            _dump_at(rev, source, traffic, out, step, tmp)
            dumps.append(out.read_text(encoding="utf-8").splitlines())
        diff = list(difflib.unified_diff(dumps[0], dumps[1], rev_a, rev_b, lineterm="", n=0))
        samples = sum(1 for line in dumps[0] if not line.startswith("#"))
        if diff:
            print("\n".join(diff[:400]))
            changed = sum(1 for line in diff if line.startswith(("+", "-"))) - 2
            print(f"DIFFERENT: {changed} lines of {samples} samples differ")
            return 1
        print(f"identical: {samples} samples ({rev_a} and {rev_b})")
        return 0


def _steps_arg(text: str) -> timedelta:
    match = re.fullmatch(r"(\d+)([mhd])", text)
    if match is None:
        raise argparse.ArgumentTypeError(f"a step like 30m, 2h or 1d, not {text!r}")
    unit = {"m": "minutes", "h": "hours", "d": "days"}[match[2]]
    return timedelta(**{unit: int(match[1])})


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="the dump (default: exported_series.txt)")
    parser.add_argument("--traffic", type=Path, help="a recorded traffic file (JSONL)")
    parser.add_argument("--write-traffic", type=Path, help="only write the traffic file")
    parser.add_argument("--days", type=int, default=4, help="days of traffic (default 4)")
    parser.add_argument("--rounds-per-day", type=int, default=9, help="demo rounds a day")
    parser.add_argument("--step", default="2h", help="the back-fill's step (default 2h)")
    parser.add_argument("--compare", nargs=2, metavar=("REV_A", "REV_B"))
    args = parser.parse_args(argv)
    step = _steps_arg(args.step)
    if args.compare:
        try:
            rev_a, rev_b = args.compare
            return compare(rev_a, rev_b, args.days, args.rounds_per_day, args.step)
        except CompareError as exc:
            print(exc, file=sys.stderr)
            return 2
    if args.write_traffic:
        count = write_traffic(args.write_traffic, args.days, args.rounds_per_day, seed=7)
        print(f"wrote {count} messages to {args.write_traffic}")
        return 0
    out = args.out or Path("exported_series.txt")
    with tempfile.TemporaryDirectory(prefix="exported-series-") as name:
        workdir = Path(name)
        traffic = args.traffic
        if traffic is None:
            traffic = workdir / "traffic.jsonl"
            write_traffic(traffic, args.days, args.rounds_per_day, seed=7)
        started = time.perf_counter()
        dump(traffic, out, step, workdir)
    print(f"wrote {out} in {time.perf_counter() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
