"""Ingest throughput and memory: ragpulse's consumer against a bare kafka-python loop.

One run, one topic of ~8 KB JSON traces on the embedded broker (6 partitions, so two
consumer processes get three each; --partitions changes it):

(a) reference: a bare kafka-python consume loop (poll only, no decoding, no commits);
(b) `ragpulse ingest --until-idle 3 --workers N` as a subprocess draining the whole backlog
    into a fresh PostgreSQL database (decode, validate, bulk upsert, sample, commit the
    transaction, commit offsets), once per N in --workers (default 1 and 2), with the peak
    RSS of its process tree sampled every 50 ms with psutil.

(a) is timed from the first record received to the last (group join excluded), with this
process's CPU per trace. (b) is timed inside the database: every batch stamps its rows'
`received_at` when it is written, so the rate is the rows stored before the last batch
began over the time since the first one began (start-up, group join and the idle wait are
excluded); its CPU is the whole command's (children included) per trace.
Targets: (b) >= 5,000 traces/s and >= 0.3 x (a); peak RSS < 400 MB with --backlog 200000;
issue 21: (b) >= 0.5 x (a) per consumer process, at most 200 MB each.
The machine has 2 cores, shared by the broker, PostgreSQL and the consumer processes.

    .venv/bin/python -m benchmarks.ingest                    # quick: 20,000 traces
    .venv/bin/python -m benchmarks.ingest --backlog 200000   # the full measurement
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
from kafka import KafkaConsumer
from sqlalchemy import text

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from collector.ingest.kafka import quiet_client_logs  # noqa: E402
from collector.ingest.kafka.broker import EmbeddedBroker  # noqa: E402
from collector.ingest.kafka.producer import make_producer, publish  # noqa: E402
from collector.settings import KafkaSettings  # noqa: E402
from collector.store.session import make_engine  # noqa: E402
from migrations.runner import upgrade  # noqa: E402
from tests.collector.traces import trace_bytes  # noqa: E402
from tests.fixtures.db import create_postgres_database, drop_postgres_database  # noqa: E402

PARTITIONS = 6
FAST_GROUP = {"max_poll_interval_ms": 10_000, "session_timeout_ms": 6000}


def produce(bootstrap: str, topic: str, count: int, size: int) -> float:
    """Publish `count` traces of about `size` bytes; return the mean message size."""
    producer = make_producer(KafkaSettings(bootstrap_servers=[bootstrap]))
    template = [trace_bytes(i, "ru" if i % 3 else "en", size_bytes=size) for i in range(50)]
    total = 0

    def values() -> Any:
        nonlocal total
        for i in range(count):
            # Fresh trace ids on pre-built bodies: building 200k bodies would dominate.
            body = template[i % 50].replace(b"trace-%08d" % (i % 50), b"trace-%08d" % i, 1)
            total += len(body)
            yield body

    try:
        publish(producer, values(), topic=topic)
    finally:
        producer.close()
    return total / count


def bare_consume(bootstrap: str, topic: str, count: int) -> tuple[float, float]:
    """(a) poll-only kafka-python loop in its own group; (traces/s, client CPU µs/trace)."""
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"bench-bare-{uuid.uuid4().hex[:8]}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        max_poll_records=2000,
        max_partition_fetch_bytes=8 * 1024 * 1024,
        fetch_max_bytes=64 * 1024 * 1024,
        heartbeat_interval_ms=2000,
        **FAST_GROUP,
    )
    seen = 0
    first = None
    try:
        while seen < count:
            for batch in consumer.poll(timeout_ms=500, max_records=2000).values():
                if first is None:
                    first, first_cpu, first_seen = time.perf_counter(), time.process_time(), 0
                    first_seen = len(batch)
                seen += len(batch)
        assert first is not None
        cpu = (time.process_time() - first_cpu) / (count - first_seen) * 1e6
        return count / (time.perf_counter() - first), cpu
    finally:
        consumer.close(autocommit=False)


@dataclass(frozen=True)
class Drain:
    """One `ragpulse ingest --workers N` run draining the backlog into a fresh database."""

    workers: int
    summary: dict[str, int]
    rate: float  # traces/s between the first and the last batch stored
    cpu_us: float  # CPU of the whole command per trace (start-up included)
    peak_mb: float  # peak RSS of the process tree
    wall_s: float


def stored_rate(url: str) -> float:
    """Traces per second from the traces' `received_at` (the moment each batch was written):
    the rows stored before the last batch began, over the time since the first one began."""
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            first, last = conn.execute(
                text("SELECT min(received_at), max(received_at) FROM traces")
            ).one()
            before_last = conn.execute(
                text("SELECT count(*) FROM traces WHERE received_at < :last"), {"last": last}
            ).scalar_one()
    finally:
        engine.dispose()
    return float(before_last) / max((last - first).total_seconds(), 1e-9)


def _tree_rss(process: psutil.Process) -> int:
    total = 0
    for p in [process, *process.children(recursive=True)]:
        with contextlib.suppress(psutil.NoSuchProcess):
            total += p.memory_info().rss
    return total


def drain(bootstrap: str, topic: str, url: str, workers: int, root: Path = ROOT) -> Drain:
    """(b) `ragpulse ingest --until-idle 3 --workers N` as a subprocess draining the backlog,
    run from the code tree `root` (this one by default)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPULSE_")}
    env.update(
        {
            # this tree's code, whatever an installed `ragpulse` or PYTHONPATH points to
            "PYTHONPATH": str(root),
            "RAGPULSE_DATABASE__URL": url,
            "RAGPULSE_KAFKA__BOOTSTRAP_SERVERS": bootstrap,
            "RAGPULSE_KAFKA__TOPICS": topic,
            "RAGPULSE_KAFKA__GROUP_ID": f"bench-drain-{uuid.uuid4().hex[:8]}",
            "RAGPULSE_KAFKA__MAX_POLL_INTERVAL_MS": str(FAST_GROUP["max_poll_interval_ms"]),
            "RAGPULSE_KAFKA__SESSION_TIMEOUT_MS": str(FAST_GROUP["session_timeout_ms"]),
        }
    )
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ragpulse.cli",
            "ingest",
            "--until-idle",
            "3",
            "--workers",
            str(workers),
        ],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    watched = psutil.Process(process.pid)
    peak = 0
    while process.poll() is None:
        try:
            peak = max(peak, _tree_rss(watched))
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    out = process.stdout.read() if process.stdout else b""
    elapsed = time.perf_counter() - started
    if process.returncode != 0:
        raise SystemExit(f"ragpulse ingest failed with exit code {process.returncode}")
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_after.ru_utime + cpu_after.ru_stime) - (cpu_before.ru_utime + cpu_before.ru_stime)
    summary = json.loads(out)
    return Drain(
        workers, summary, stored_rate(url), cpu / summary["stored"] * 1e6, peak / 2**20, elapsed
    )


def _count(url: str) -> int:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text("SELECT count(*) FROM traces")).scalar_one())
    finally:
        engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--backlog", type=int, default=20_000, help="traces on the topic (default: 20000)"
    )
    parser.add_argument(
        "--size", type=int, default=8192, help="approximate bytes per trace (default: 8192)"
    )
    parser.add_argument(
        "--partitions",
        type=int,
        default=PARTITIONS,
        help=f"partitions of the topic (default: {PARTITIONS})",
    )
    parser.add_argument(
        "--workers",
        type=lambda v: [int(x) for x in v.split(",")],
        default=[1, 2],
        help="comma-separated --workers values to run (b) with (default: 1,2)",
    )
    args = parser.parse_args()
    quiet_client_logs()
    topic = f"bench.traces.{uuid.uuid4().hex[:6]}"
    with EmbeddedBroker() as broker:
        broker.create_topics([topic], partitions=args.partitions)
        started = time.perf_counter()
        mean = produce(broker.bootstrap_servers, topic, args.backlog, args.size)
        print(
            f"produced {args.backlog} traces of {mean:.0f} B mean in "
            f"{time.perf_counter() - started:.1f}s; code under test: {ROOT}; load average "
            f"{os.getloadavg()[0]:.2f}",
            flush=True,
        )
        bare, bare_cpu = bare_consume(broker.bootstrap_servers, topic, args.backlog)
        print(
            f"(a) bare kafka-python poll loop: {bare:,.0f} traces/s "
            f"(client CPU {bare_cpu:.0f} µs/trace)",
            flush=True,
        )

        results = []
        for workers in args.workers:
            url = create_postgres_database("ragpulse_bench")
            try:
                upgrade(url)
                run = drain(broker.bootstrap_servers, topic, url, workers)
                stored = _count(url)
            finally:
                drop_postgres_database(url)
            if stored != args.backlog or run.summary["stored"] != args.backlog:
                raise SystemExit(f"stored {stored} of {args.backlog} ({run.summary})")
            results.append(run)
            print(
                f"(b) `ragpulse ingest --until-idle 3 --workers {workers}` -> PostgreSQL: "
                f"{run.rate:,.0f} traces/s = {run.rate / bare:.2f} x (a) (CPU of the command "
                f"{run.cpu_us:.0f} µs/trace); drained {args.backlog} in {run.wall_s:.1f}s wall "
                f"incl. start-up, join and 3s idle; peak RSS {run.peak_mb:.0f} MB; load "
                f"average {os.getloadavg()[0]:.2f}",
                flush=True,
            )
        for run in results:
            verdict = [
                f"(b) >= 5000/s: {'yes' if run.rate >= 5000 else 'NO'}",
                f"(b) >= 0.3 x (a): {'yes' if run.rate >= 0.3 * bare else 'NO'}",
                f"(b) >= 0.5 x (a) per process (issue 21): "
                f"{'yes' if run.rate >= 0.5 * bare * run.workers else 'NO'}",
                f"peak RSS < 400 MB: {'yes' if run.peak_mb < 400 else 'NO'}",
            ]
            if run.workers == 1:
                verdict.append(f"peak RSS <= 200 MB: {'yes' if run.peak_mb <= 200 else 'NO'}")
            print(f"targets, --workers {run.workers}: " + "; ".join(verdict), flush=True)


if __name__ == "__main__":
    main()
