"""Ingest throughput and memory: ragpulse's consumer against a bare kafka-python loop.

One run, one topic of ~8 KB JSON traces on the embedded broker (3 partitions):

(a) reference: a bare kafka-python consume loop (poll only, no decoding, no commits);
(b) ragpulse's consumer (the `ragpulse ingest` code path) into a fresh PostgreSQL
    database: decode, validate, bulk upsert, sample, commit the transaction, commit offsets;
(c) `ragpulse ingest --until-idle` as a subprocess draining the whole backlog into another
    fresh database, its peak RSS sampled with psutil.

Throughput of (a) and (b) is measured from the first record received to the last one
processed (group join excluded), with this process's CPU time per trace beside it (steadier
than wall time on a shared machine; PostgreSQL's own CPU is not in it).
Targets: (b) >= 5,000 traces/s and >= 0.3 x (a); peak RSS of (c) < 400 MB with
--backlog 200000.

    .venv/bin/python -m benchmarks.ingest                    # quick: 20,000 traces
    .venv/bin/python -m benchmarks.ingest --backlog 200000   # the full measurement
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import psutil
from kafka import KafkaConsumer
from prometheus_client import CollectorRegistry
from sqlalchemy import create_engine, text

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from collector.ingest import BatchResult  # noqa: E402
from collector.kafka import quiet_client_logs  # noqa: E402
from collector.kafka.broker import EmbeddedBroker  # noqa: E402
from collector.kafka.producer import make_producer, publish  # noqa: E402
from collector.kafka.stats import ConsumerStats  # noqa: E402
from collector.service import Service  # noqa: E402
from collector.settings import KafkaSettings, load_settings  # noqa: E402
from collector.store.migrate import upgrade  # noqa: E402
from tests.collector.traces import trace_bytes  # noqa: E402
from tests.fixtures.db import create_postgres_database, drop_postgres_database  # noqa: E402

PARTITIONS = 3
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


class _TimedStats(ConsumerStats):
    """Counts as usual and remembers when the first and last committed batch ended."""

    def __init__(self, registry: CollectorRegistry) -> None:
        super().__init__(registry)
        self.first_batch_size = 0
        self.first_end: float | None = None
        self.last_end = 0.0
        self.first_cpu = 0.0
        self.last_cpu = 0.0

    def record(self, result: BatchResult) -> None:
        super().record(result)
        now, cpu = time.perf_counter(), time.process_time()
        if self.first_end is None:
            self.first_end, self.first_cpu = now, cpu
            self.first_batch_size = result.consumed
        self.last_end, self.last_cpu = now, cpu


def ragpulse_consume(bootstrap: str, topic: str, count: int, url: str) -> tuple[float, float, int]:
    """(b) the ragpulse consumer into PostgreSQL; (traces/s, client CPU µs/trace, stored)."""
    settings = load_settings(
        database={"url": url},
        kafka={
            "bootstrap_servers": [bootstrap],
            "topics": [topic],
            "group_id": f"bench-ragpulse-{uuid.uuid4().hex[:8]}",
            **FAST_GROUP,
        },
    )
    service = Service(settings, registry=CollectorRegistry())
    stats = service.consumer.stats = _TimedStats(CollectorRegistry())

    def stop_when_done() -> None:
        while stats.totals.consumed < count and not service.stop_event.is_set():
            time.sleep(0.05)
        service.request_stop()

    watcher = threading.Thread(target=stop_when_done, daemon=True)
    watcher.start()
    service.run()
    watcher.join()
    assert stats.first_end is not None
    # The first batch's own duration is not known; rate over the rest of the stream.
    measured = count - stats.first_batch_size
    rate = measured / max(stats.last_end - stats.first_end, 1e-9)
    cpu = (stats.last_cpu - stats.first_cpu) / measured * 1e6
    return rate, cpu, stats.totals.stored


def drain_subprocess(bootstrap: str, topic: str, url: str) -> tuple[dict[str, int], float, float]:
    """(c) `ragpulse ingest --until-idle 3` draining the backlog; (summary, peak MB, seconds)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPULSE_")}
    env.update(
        {
            "RAGPULSE_DATABASE__URL": url,
            "RAGPULSE_KAFKA__BOOTSTRAP_SERVERS": bootstrap,
            "RAGPULSE_KAFKA__TOPICS": topic,
            "RAGPULSE_KAFKA__GROUP_ID": f"bench-drain-{uuid.uuid4().hex[:8]}",
            "RAGPULSE_KAFKA__MAX_POLL_INTERVAL_MS": str(FAST_GROUP["max_poll_interval_ms"]),
            "RAGPULSE_KAFKA__SESSION_TIMEOUT_MS": str(FAST_GROUP["session_timeout_ms"]),
        }
    )
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "collector.cli", "ingest", "--until-idle", "3"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    watched = psutil.Process(process.pid)
    peak = 0
    while process.poll() is None:
        try:
            peak = max(peak, watched.memory_info().rss)
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    out = process.stdout.read() if process.stdout else b""
    elapsed = time.perf_counter() - started
    if process.returncode != 0:
        raise SystemExit(f"ragpulse ingest failed with exit code {process.returncode}")
    return json.loads(out), peak / 2**20, elapsed


def _count(url: str) -> int:
    engine = create_engine(url)
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
    args = parser.parse_args()
    quiet_client_logs()
    topic = f"bench.traces.{uuid.uuid4().hex[:6]}"
    with EmbeddedBroker() as broker:
        broker.create_topics([topic], partitions=PARTITIONS)
        started = time.perf_counter()
        mean = produce(broker.bootstrap_servers, topic, args.backlog, args.size)
        print(
            f"produced {args.backlog} traces of {mean:.0f} B mean in "
            f"{time.perf_counter() - started:.1f}s",
            flush=True,
        )
        bare, bare_cpu = bare_consume(broker.bootstrap_servers, topic, args.backlog)
        print(
            f"(a) bare kafka-python poll loop: {bare:,.0f} traces/s "
            f"(client CPU {bare_cpu:.0f} µs/trace)",
            flush=True,
        )

        url = create_postgres_database("ragpulse_bench")
        try:
            upgrade(url)
            rate, cpu, stored = ragpulse_consume(broker.bootstrap_servers, topic, args.backlog, url)
            assert stored == _count(url) == args.backlog, (stored, _count(url))
        finally:
            drop_postgres_database(url)
        print(
            f"(b) ragpulse consumer -> PostgreSQL, offsets committed: {rate:,.0f} traces/s "
            f"= {rate / bare:.2f} x (a) (client CPU {cpu:.0f} µs/trace, PostgreSQL not counted)",
            flush=True,
        )

        url = create_postgres_database("ragpulse_bench")
        try:
            upgrade(url)
            summary, peak_mb, elapsed = drain_subprocess(broker.bootstrap_servers, topic, url)
            stored = _count(url)
        finally:
            drop_postgres_database(url)
        print(
            f"(c) `ragpulse ingest --until-idle 3` drained {summary['consumed']} traces "
            f"(stored {stored}) in {elapsed:.1f}s wall incl. start-up, join and 3s idle; "
            f"peak RSS {peak_mb:.0f} MB",
            flush=True,
        )
        verdict = [
            f"(b) >= 5000/s: {'yes' if rate >= 5000 else 'NO'}",
            f"(b) >= 0.3 x (a): {'yes' if rate >= 0.3 * bare else 'NO'}",
            f"peak RSS < 400 MB: {'yes' if peak_mb < 400 else 'NO'}",
        ]
        print("targets: " + "; ".join(verdict), flush=True)


if __name__ == "__main__":
    main()
