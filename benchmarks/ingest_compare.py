"""Ingest A/B: `ragpulse ingest --workers 1` from two code trees on one topic, interleaved.

Before/after figures on a shared machine are only comparable when taken in the same
minutes: one topic is produced once, then each repeat runs the bare kafka-python loop (the
reference of `benchmarks.ingest`) and each tree's `ragpulse ingest --until-idle 3
--workers 1` into a fresh PostgreSQL database, the order of the trees alternating between
repeats (the trees must share the database schema: this tree migrates it). Each line
gives the rate (timed inside the database), the ratio to that repeat's bare loop, the
command's CPU per trace, its peak RSS and the load average.

    git worktree add /tmp/base <commit>   # or: git archive <commit> | tar -x -C /tmp/base
    .venv/bin/python -m benchmarks.ingest_compare /tmp/base . --backlog 200000 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.ingest import _count, bare_consume, drain, produce  # noqa: E402
from collector.ingest.kafka import quiet_client_logs  # noqa: E402
from collector.ingest.kafka.broker import EmbeddedBroker  # noqa: E402
from migrations.runner import upgrade  # noqa: E402
from tests.fixtures.db import create_postgres_database, drop_postgres_database  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", type=Path, help="code trees to compare")
    parser.add_argument("--backlog", type=int, default=50_000, help="traces (default: 50000)")
    parser.add_argument("--size", type=int, default=8192, help="bytes per trace (default: 8192)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds (default: 3)")
    args = parser.parse_args()
    trees = [t.resolve() for t in args.trees]
    quiet_client_logs()
    topic = f"bench.compare.{uuid.uuid4().hex[:6]}"
    with EmbeddedBroker() as broker:
        broker.create_topics([topic], partitions=6)
        started = time.perf_counter()
        mean = produce(broker.bootstrap_servers, topic, args.backlog, args.size)
        print(
            f"produced {args.backlog} traces of {mean:.0f} B in "
            f"{time.perf_counter() - started:.1f}s",
            flush=True,
        )
        for repeat in range(args.repeats):
            bare, bare_cpu = bare_consume(broker.bootstrap_servers, topic, args.backlog)
            print(
                f"[{repeat}] (a) bare loop {bare:,.0f}/s ({bare_cpu:.0f} µs CPU/trace), load "
                f"{os.getloadavg()[0]:.2f}",
                flush=True,
            )
            for tree in trees if repeat % 2 == 0 else trees[::-1]:
                url = create_postgres_database("ragpulse_bench")
                try:
                    upgrade(url)
                    run = drain(broker.bootstrap_servers, topic, url, 1, root=tree)
                    stored = _count(url)
                finally:
                    drop_postgres_database(url)
                if stored != args.backlog:
                    raise SystemExit(f"{tree}: stored {stored} of {args.backlog}")
                print(
                    f"[{repeat}] {tree}: {run.rate:,.0f}/s = {run.rate / bare:.2f}x (a), CPU "
                    f"{run.cpu_us:.0f} µs/trace, peak RSS {run.peak_mb:.0f} MB, load "
                    f"{os.getloadavg()[0]:.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
