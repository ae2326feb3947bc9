"""Sharded jobs benchmark (issue 21): the judge job's throughput with 1, 2 and 4 workers.

A local OpenAI-compatible server (tests/fixtures/llm_server.py, in its own process like a
remote provider) answers every judge prompt with valid JSON after a fixed latency. For
each worker count, a fresh PostgreSQL database gets the same judge-sampled traces and that
many `tests.jobs.shard_worker` processes run `rag_quality` (the service's runner, sharded:
`scheduler.shards` = 32), each with the judge's `max_concurrency` bound, started together
once all have imported. Two throughputs: all the traces over the seconds until the last
one is stored (the drain at the end included: there, some workers' shards are empty while
others still hold a batch, so the judge is no longer the bottleneck), and the middle half
of them (from a quarter to three quarters stored) over its seconds: the rate while every
worker has a full batch, which is what the judge being the bottleneck means. The targets
(>= 1.8x at 2 and >= 3.2x at 4 against 1) are on the latter; both are printed.

Run: .venv/bin/python -m benchmarks.sharded_jobs [--traces 96] [--latency 0.2]
     [--concurrency 4] [--workers 1,2,4]
(PostgreSQL at RAGPULSE_TEST_POSTGRES_URL, default postgresql+psycopg://postgres@127.0.0.1/test)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import func, select

from collector.store.models import JobOutcome, SampleRecord, Trace
from collector.store.session import make_engine, make_session_factory
from migrations.runner import upgrade
from tests.fixtures.db import create_postgres_database, drop_postgres_database
from tests.fixtures.llm_server import serve_in_subprocess

WORKER = (sys.executable, "-m", "tests.jobs.shard_worker")
ROOT = Path(__file__).resolve().parents[1]
JOB = "rag_quality"


def fill(url: str, traces: int) -> None:
    """`traces` judge-sampled traces of the last hour, each with three contexts."""
    now = datetime.now(UTC)
    engine = make_engine(url)
    with make_session_factory(engine)() as session:
        for i in range(traces):
            ts = now - timedelta(minutes=1 + i % 50)
            session.add(
                Trace(
                    trace_id=f"bench-{i}",
                    timestamp=ts,
                    received_at=ts,
                    updated_at=ts,
                    question=f"Вопрос {i}: как работает поиск в системе?",
                    answer=f"Ответ {i}: система ищет документы и составляет ответ.",
                    reference=f"Эталон {i}: поиск находит документы, модель пишет ответ.",
                    contexts=[
                        {"id": f"d{i}-{j}", "text": f"Фрагмент {j} документа {i} о поиске."}
                        for j in range(3)
                    ],
                    tags={"tenant": f"t{i % 3}"},
                )
            )
            session.add(SampleRecord(trace_id=f"bench-{i}", purpose="judge", sampled_at=ts))
        session.commit()
    engine.dispose()


def stored(url: str) -> int:
    engine = make_engine(url)
    try:
        with make_session_factory(engine)() as session:
            return int(
                session.scalar(
                    select(func.count()).select_from(JobOutcome).where(JobOutcome.job == JOB)
                )
                or 0
            )
    finally:
        engine.dispose()


def measure(
    workers: int, traces: int, base_url: str, concurrency: int, per_run: int
) -> tuple[float, float, list[int]]:
    """Seconds until every trace is judged by `workers` processes; seconds from a quarter
    to three quarters of them (every worker busy: the judge the bottleneck); how many
    each worker judged."""
    url = create_postgres_database("ragpulse_bench")
    try:
        upgrade(url)
        fill(url, traces)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGPULSE_", "OPENAI_"))}
        env.update(
            {
                "PYTHONPATH": str(ROOT),
                "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                "RAGPULSE_DATABASE__URL": url,
                "RAGPULSE_SCHEDULER__SHARDS": "32",
                "RAGPULSE_SCHEDULER__INTERVAL_S": "5",
                "RAGPULSE_ALERTING__ENABLED": "false",
                "RAGPULSE_JUDGE__MODELS": "openai/bench-judge",
                "RAGPULSE_JUDGE__API_BASE": base_url,
                "RAGPULSE_JUDGE__API_KEY": "dummy",
                "RAGPULSE_JUDGE__MAX_CONCURRENCY": str(concurrency),
                "RAGPULSE_SCHEDULER__JUDGE_TRACES_PER_RUN": str(per_run),
            }
        )
        with tempfile.TemporaryDirectory() as tmp:
            go = Path(tmp) / "go"
            procs = [
                subprocess.Popen(
                    [*WORKER, JOB, "--until-idle", "--warm-judge", "--start-file", str(go)],
                    cwd=ROOT,
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                )
                for _ in range(workers)
            ]
            for p in procs:
                assert p.stdout is not None
                if '"ready"' not in p.stdout.readline():
                    raise RuntimeError("a worker did not start")
            go.touch()
            started = time.perf_counter()
            marks: dict[float, float] = {}  # share of the traces stored -> seconds
            while (done := stored(url)) < traces:
                for share in (0.25, 0.75):
                    if done >= share * traces and share not in marks:
                        marks[share] = time.perf_counter() - started
                time.sleep(0.05)
            seconds = time.perf_counter() - started
            for share in (0.25, 0.75):
                marks.setdefault(share, seconds)
            shares = []
            for p in procs:
                out, _ = p.communicate(timeout=120)  # (the cpu used is reported by main)
                runs = [json.loads(line) for line in out.splitlines() if '"status"' in line]
                shares.append(sum(r["new"] for r in runs))
        return seconds, marks[0.75] - marks[0.25], shares
    finally:
        drop_postgres_database(url)


def _children_cpu() -> float:
    """CPU seconds (user + system) of the finished worker processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=160)
    parser.add_argument("--latency", type=float, default=0.2, help="judge latency, seconds")
    parser.add_argument("--concurrency", type=int, default=4, help="judge calls per worker")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument(
        "--per-run", type=int, default=10, help="scheduler.judge_traces_per_run (per batch)"
    )
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.workers.split(",")]

    base_url, requests, stop = serve_in_subprocess(args.latency)
    try:
        print(
            f"{JOB}: {args.traces} traces, judge latency {args.latency * 1000:.0f} ms, "
            f"max_concurrency {args.concurrency} per worker, at most {args.per_run} traces a "
            f"batch, 32 shards, {os.cpu_count()} CPUs"
        )
        print(
            f"{'workers':>7} {'all, s':>7} {'traces/s':>9} {'speed-up':>9}   "
            f"{'middle half, s':>14} {'traces/s':>9} {'speed-up':>9}"
        )
        base = steady_base = 0.0
        for n in counts:
            before = requests()
            cpu = _children_cpu()
            seconds, middle, shares = measure(
                n, args.traces, base_url, args.concurrency, args.per_run
            )
            cpu = _children_cpu() - cpu
            calls = requests() - before
            rate, steady = args.traces / seconds, args.traces / 2 / middle
            base, steady_base = base or rate, steady_base or steady
            target = {2: " (target >= 1.8)", 4: " (target >= 3.2)"}.get(n, "")
            print(
                f"{n:7d} {seconds:7.1f} {rate:9.2f} {rate / base:8.2f}x   "
                f"{middle:14.1f} {steady:9.2f} {steady / steady_base:8.2f}x{target}",
                flush=True,
            )
            print(
                f"{'':7} traces per worker {shares}; {calls / args.traces:.1f} calls per trace, "
                f"{calls / seconds:.1f} calls/s; workers' CPU {cpu:.0f} s (imports included)",
                flush=True,
            )
        bound = args.concurrency / args.latency
        print(f"one worker's bound: {bound:.0f} calls/s (max_concurrency / latency)")
    finally:
        stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
