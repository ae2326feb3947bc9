"""Evaluation-events benchmark: what emitting `gen_ai.evaluation.result` costs per trace.

A fresh SQLite database gets `--traces` retrieval traces sampled for the real-users
benchmark (ranked contexts, ground truth, the last 6 hours), half of them OTLP-sourced
(W3C ids, two span summaries each, so the events worker looks up their root span) and
half JSON traces with free-form ids. The real `real_users_benchmark` job (13 metrics)
scores them once per run, each run on its own copy of the database:

1. reference: the job with no observer; its wall and CPU time per trace, and the part of
   it spent storing the per-trace outcomes (`job_outcomes` upserts, timed around the
   job's own call);
2. the same job with the events observer (`exporters.evaluation_events`, exporting over
   OTLP/HTTP to a local receiver in a subprocess, so its CPU is not ours): the time
   `observe` takes in the job thread, per trace;
3. the background cost: the outcomes captured in run 2 handed to a fresh observer again
   and exported to the receiver; the process's CPU time from `observe` until every event
   was acknowledged, per trace (the worker's lookups in SQLite, building the records, the
   SDK's batching, protobuf encoding, HTTP).

Reported per trace and as ratios to the reference of the same run: observer / storing
outcomes, observer / whole job, background CPU / job CPU.

Run: `.venv/bin/python -m benchmarks.evaluation_events [--traces N] [--repeat N]`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import insert

import collector.jobs.recording.cursor as sync
from collector.jobs.recording.observers import Evaluated
from collector.jobs.run.engine import IncrementalJob
from collector.jobs.scheduler import definitions
from collector.settings import Settings, load_settings
from collector.store.models import SampleRecord, Trace
from collector.store.session import make_engine, make_session_factory
from exporters.evaluation_events import EvaluationEvents
from exporters.otlp_exporter import log_exporter
from migrations.runner import upgrade
from ragpulse.job_setup import job_environment

JOB = "real_users_benchmark"
_STORE = "upsert_outcomes"
"""The function the job stores its per-trace outcomes with, timed around its calls."""


def build(path: Path, traces: int, now: datetime) -> str:
    url = f"sqlite:///{path}"
    upgrade(url)
    engine = make_engine(url)
    rows, samples = [], []
    for i in range(traces):
        otlp = i % 2 == 0
        trace_id = f"{i + 1:032x}" if otlp else f"order-{i}"
        ts = now - timedelta(seconds=(i * 21600) // traces + 1)
        spans = None
        if otlp:
            root, child = f"{i + 1:016x}", f"{i + 10**9:016x}"
            spans = {
                root: {"parent": "", "kind": "CHAIN", "name": "rag", "start": 1, "end": 9},
                child: {"parent": root, "kind": "RETRIEVER", "name": "r", "start": 2, "end": 3},
            }
        rows.append(
            {
                "trace_id": trace_id,
                "timestamp": ts,
                "received_at": ts,
                "updated_at": ts,
                "source": "otlp" if otlp else "json",
                "question": f"question {i}",
                "answer": f"answer {i}",
                "contexts": [{"id": f"d{i % 7}"}, {"id": f"d{(i + 1) % 7}"}, {"id": "d9"}],
                "relevant_ids": [f"d{(i * 3) % 7}"],
                "tags": {"tenant": ("acme", "globex", "initech")[i % 3]},
                "spans": spans,
            }
        )
        samples.append({"trace_id": trace_id, "purpose": JOB, "sampled_at": ts})
    with engine.begin() as conn:
        conn.execute(insert(Trace), rows)
        conn.execute(insert(SampleRecord), samples)
    engine.dispose()
    return url


@dataclass
class JobRun:
    wall_s: float
    cpu_s: float
    store_s: float
    observe_s: float
    traces: int


class _Timed:
    """The observer, timed in the job thread; keeps what it was given."""

    def __init__(self, inner: EvaluationEvents) -> None:
        self.inner = inner
        self.seconds = 0.0
        self.seen: list[Evaluated] = []

    def observe(self, evaluated: Sequence[Evaluated]) -> None:
        started = time.perf_counter()
        self.inner.observe(evaluated)
        self.seconds += time.perf_counter() - started
        self.seen.extend(evaluated)


def run_job(url: str, settings: Settings, now: datetime, observer: _Timed | None) -> JobRun:
    engine = make_engine(url)
    env = job_environment(settings, engine, embedder=None, judge=None)
    env.embedder = None
    if observer is not None:
        env.observers = (observer,)
    stored = [0.0]
    upsert = getattr(sync, _STORE)

    def timed_upsert(session: Any, records: Any) -> None:
        started = time.perf_counter()
        upsert(session, records)
        stored[0] += time.perf_counter() - started

    setattr(sync, _STORE, timed_upsert)
    try:
        job = IncrementalJob(definitions(settings)[JOB], env)
        wall, cpu = time.perf_counter(), time.process_time()
        report = job.run(now)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        setattr(sync, _STORE, upsert)
        engine.dispose()
    return JobRun(wall, cpu, stored[0], observer.seconds if observer else 0.0, report.new_traces)


def background(url: str, settings: Settings, seen: list[Evaluated]) -> tuple[float, int, int]:
    """CPU seconds of exporting `seen` from `observe` until the receiver acknowledged all;
    events sent and dropped."""
    engine = make_engine(url)
    events = EvaluationEvents(
        settings.evaluation_events, make_session_factory(engine), log_exporter()
    )
    cpu = time.process_time()
    for start in range(0, len(seen), 200):  # as a job hands them: one run's batch at a time
        events.observe(seen[start : start + 200])
    events.flush(120)
    cpu = time.process_time() - cpu
    events.shutdown()
    engine.dispose()
    return cpu, events.counts.sent, sum(events.counts.dropped.values())


def serve() -> int:
    """Receiver mode (a subprocess): print the port, count records until stdin closes."""
    from tests.fixtures.otlp_receiver import start_receiver

    receiver = start_receiver()
    print(receiver.server.server_port, flush=True)
    sys.stdin.read()
    print(len(receiver.records()), flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        return serve()
    receiver = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.evaluation_events", "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert receiver.stdout is not None and receiver.stdin is not None
    port = int(receiver.stdout.readline())
    os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{port}"
    settings = load_settings(
        evaluation_events={"enabled": True, "queue_size": 200_000, "batch_size": 512},
        sampling={"real_users_benchmark": 1.0},
    )
    now = datetime.now(UTC)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base.db"
        build(base, args.traces, now)
        for r in range(args.repeat):
            copies = [Path(tmp) / f"r{r}-{k}.db" for k in range(2)]
            for copy in copies:
                shutil.copy(base, copy)
            ref = run_job(f"sqlite:///{copies[0]}", settings, now, None)
            engine = make_engine(f"sqlite:///{copies[1]}")
            events = EvaluationEvents(
                settings.evaluation_events, make_session_factory(engine), log_exporter()
            )
            timed = _Timed(events)
            with_events = run_job(f"sqlite:///{copies[1]}", settings, now, timed)
            events.flush(120)
            events.shutdown()
            engine.dispose()
            bg_cpu, sent, dropped = background(f"sqlite:///{copies[1]}", settings, timed.seen)
            rows.append((ref, with_events, bg_cpu, sent, dropped))
            print(
                f"  run {r + 1}: job {ref.wall_s:.2f}s, with events {with_events.wall_s:.2f}s, "
                f"observe {with_events.observe_s * 1e3:.1f} ms, background CPU {bg_cpu:.2f}s, "
                f"sent {sent}, dropped {dropped}",
                flush=True,
            )
    receiver.stdin.close()
    received = receiver.stdout.read().strip()
    receiver.wait(10)

    def med(values: list[float]) -> float:
        return statistics.median(values)

    n = args.traces
    job_us = med([r[0].wall_s for r in rows]) / n * 1e6
    job_cpu_us = med([r[0].cpu_s for r in rows]) / n * 1e6
    store_us = med([r[0].store_s for r in rows]) / n * 1e6
    observe_us = med([r[1].observe_s for r in rows]) / n * 1e6
    with_us = med([r[1].wall_s for r in rows]) / n * 1e6
    bg_us = med([r[2] for r in rows]) / n * 1e6
    events_per_trace = rows[0][3] / n
    print(
        f"\n{n} traces ({n // 2} OTLP, {n - n // 2} JSON), job {JOB}, "
        f"{events_per_trace:.1f} events per trace, medians of {args.repeat} runs; "
        f"receiver got {received} records\n"
    )
    print("| per evaluated trace | µs | ratio |")
    print("| --- | ---: | ---: |")
    print(f"| job run, no observer (wall) | {job_us:.0f} | reference |")
    print(f"| job run, no observer (CPU) | {job_cpu_us:.0f} | reference (CPU) |")
    print(f"| of it: storing the outcomes | {store_us:.0f} | reference (store) |")
    print(f"| job run with events (wall) | {with_us:.0f} | {with_us / job_us:.3f} x job |")
    print(
        f"| observer in the job thread | {observe_us:.2f} | {observe_us / store_us:.4f} x store, "
        f"{observe_us / job_us:.4f} x job |"
    )
    print(f"| background export CPU | {bg_us:.0f} | {bg_us / job_cpu_us:.2f} x job CPU |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
