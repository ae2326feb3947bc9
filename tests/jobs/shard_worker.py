"""A jobs worker process for the sharding tests and benchmark: what `ragpulse run --role
jobs` does for one job, without Kafka, the HTTP endpoint or an embedding model.

    python -m tests.jobs.shard_worker JOB [--start-file PATH] [--until-idle] [--warm-judge]
        [--real-embedder]

Settings come from the `RAGPULSE_*` environment (database, judge, scheduler.shards, ...).
The job runs through the service's own `build_runner` (so sharded on PostgreSQL) with a
deterministic hashing text encoder (`--real-embedder`: the default model), over and
over: a run right after the previous one.
The process registers as a live worker at once, prints a `ready` line, waits for
`--start-file` to exist (so workers started together overlap), prints one JSON line per
run, and with `--until-idle` exits once a run found nothing new, no shard of the job is
leased by anyone and its results count every stored batch.
SIGTERM stops it after the run in hand.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
from sqlalchemy import Engine, func, select

from collector.settings import load_settings
from collector.store.models import JobShard, JobState
from collector.store.session import make_engine, make_session_factory

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


class HashEncoder:
    """Deterministic unit vectors from a text hash (no model, no CPU contention)."""

    model_name = "hash-64"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
            rows.append(np.random.default_rng(seed).standard_normal(64))
        if not rows:
            return np.zeros((0, 64), dtype=np.float32)
        out = np.asarray(rows, dtype=np.float32)
        unit: np.ndarray = out / np.linalg.norm(out, axis=1, keepdims=True)
        return unit


def settled(engine: Engine, job: str) -> bool:
    """No shard of `job` is leased, and its last results count every batch stored."""
    with make_session_factory(engine)() as session:
        leased, stores = session.execute(
            select(
                func.count().filter(JobShard.lease_until > func.clock_timestamp()),
                func.coalesce(func.sum(JobShard.stores), 0),
            ).where(JobShard.job == job)
        ).one()
        state = session.get(JobState, job)
    return leased == 0 and state is not None and state.aggregated_stores == stores


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("job")
    parser.add_argument("--start-file", type=Path)
    parser.add_argument("--until-idle", action="store_true")
    parser.add_argument(
        "--warm-judge", action="store_true", help="import litellm before the start (benchmarks)"
    )
    parser.add_argument(
        "--real-embedder", action="store_true", help="the default embedding model, not a hash"
    )
    args = parser.parse_args(argv)

    from collector.jobs.scheduler import build_runner
    from ragpulse.job_setup import job_environment

    stop = threading.Event()

    def on_term(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_term)
    settings = load_settings()
    engine = make_engine(settings.database.url.get_secret_value())
    embedder: Any = HashEncoder()
    if args.real_embedder:
        from evaluators.embedder import Embedder

        embedder = Embedder()
    env = job_environment(settings, engine, embedder=embedder)
    runner = build_runner(settings, engine, env, names=[args.job])
    if args.warm_judge and env.judge is not None:
        from evaluators.judge.transport import load_litellm

        load_litellm()  # seconds of imports a long-running worker has paid long before
    runner.register()
    print(json.dumps({"worker": runner.worker, "pid": os.getpid(), "ready": True}), flush=True)
    while args.start_file is not None and not args.start_file.exists():
        time.sleep(0.01)
    try:
        while not stop.is_set():
            report = runner.run(args.job)
            line = {
                "worker": runner.worker,
                "status": report.status,
                "new": report.new_traces,
                "results": report.results,
                "shards": report.shards,
                "message": report.message,
                "at": time.time(),
            }
            print(json.dumps(line), flush=True)
            idle = report.status == "ok" and report.new_traces == 0
            if args.until_idle and idle and settled(engine, args.job):
                break
            stop.wait(0.05)
    finally:
        runner.close()
        engine.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
