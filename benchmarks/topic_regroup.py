"""What giving traces a topic costs the jobs: the run that moves their stored outcomes to
their topic's group (`collector.jobs.recording.regroup`) against a run with nothing to move.

N retrieval traces are stored and scored by the `real_users_benchmark` job (no topics yet),
then every trace is given one of 20 topics (`trace_topics`, as the topics job writes them)
and the job runs again: that run moves N outcome rows and their bucket contributions. The
reference, in the same process and database, is the next run (nothing assigned since).
Reported: both runs' seconds, their ratio, rows moved per second, and the peak RSS growth
across the moving run (pages of `regroup.PAGE` rows: it must not grow with N).

Run: `.venv/bin/python -m benchmarks.topic_regroup [--traces 20000 100000] [--url URL]`
(default: a database `ragpulse_regroup_bench` on the local PostgreSQL, created when missing,
emptied and migrated to head — the product's partitioned layout — before each size).
"""

from __future__ import annotations

import argparse
import resource
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy import insert, text

from collector.jobs.run.engine import IncrementalJob
from collector.jobs.scheduler import definitions
from collector.settings import load_settings
from collector.store.models import SampleRecord, Trace
from collector.store.session import make_engine
from collector.store.topics import Assigned, write_assignments
from ragpulse.job_setup import job_environment

JOB = "real_users_benchmark"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
TOPICS = 20
CHUNK = 5000


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _plant(engine: object, count: int) -> None:
    from sqlalchemy.orm import Session

    with Session(engine) as session:  # type: ignore[call-overload]
        for start in range(0, count, CHUNK):
            rows = []
            samples = []
            for i in range(start, min(count, start + CHUNK)):
                ts = NOW - timedelta(seconds=60 + (i * 7919) % (6 * 86400))
                trace_id = f"t{i:07d}"
                rows.append(
                    {
                        "trace_id": trace_id,
                        "timestamp": ts,
                        "updated_at": ts,
                        "received_at": ts,
                        "question": f"question {i}",
                        "contexts": [{"id": "d1"}, {"id": "d2"}],
                        "relevant_ids": ["d1" if i % 3 else "d2"],
                        "tags": {"tenant": f"t{i % 4}"},
                    }
                )
                samples.append({"trace_id": trace_id, "purpose": JOB, "sampled_at": ts})
            session.execute(insert(Trace), rows)
            session.execute(insert(SampleRecord), samples)
        session.commit()


def _fresh(url: str) -> None:
    """An empty database at `url`, migrated to head."""
    from sqlalchemy.engine import make_url

    from migrations.runner import upgrade

    target = make_url(url)
    admin = make_engine(target.set(database="postgres").render_as_string(hide_password=False))
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{target.database}"'))
        conn.execute(text(f'CREATE DATABASE "{target.database}"'))
    admin.dispose()
    upgrade(url)


def measure(url: str, count: int) -> str:
    _fresh(url)
    engine = make_engine(url)
    _plant(engine, count)
    settings = load_settings(database={"url": url}, scheduler={"jobs": [JOB]})
    env = job_environment(settings, engine, embedder=None, judge=None)
    job = IncrementalJob(definitions(settings)[JOB], env)
    scored = job.run(NOW - timedelta(seconds=30)).new_traces
    from sqlalchemy.orm import Session

    with Session(engine) as session:
        ids = [r[0] for r in session.execute(text("SELECT trace_id FROM traces"))]
        write_assignments(
            session,
            [Assigned(t, int(t[1:]) % TOPICS, 0.9) for t in ids],
            NOW - timedelta(seconds=20),
        )
        session.commit()
    before = _rss_mb()
    started = time.perf_counter()
    job.run(NOW - timedelta(seconds=10))
    moving = time.perf_counter() - started
    grown = _rss_mb() - before
    started = time.perf_counter()
    job.run(NOW)
    idle = time.perf_counter() - started
    engine.dispose()
    return (
        f"| {count:,} | {scored:,} | {moving:.1f} | {idle:.1f} | {moving / idle:.1f}x | "
        f"{count / max(moving - idle, 1e-9):,.0f} | {grown:+.0f} |"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--traces", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument(
        "--url", default="postgresql+psycopg://postgres@127.0.0.1:5432/ragpulse_regroup_bench"
    )
    args = parser.parse_args(argv)
    print(
        "| traces | scored | run moving them (s) | run with nothing to move (s) | ratio | "
        "rows moved/s (net) | peak RSS growth (MB) |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for count in args.traces:
        print(measure(args.url, count), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
