"""Monitoring benchmark: incremental job runs over 1,000,000 stored traces, and scrapes.

1. Jobs. A fresh PostgreSQL database gets `--traces` realistic traces (three tenants,
   Russian and English questions, sessions, ground truth, production-judge decisions and
   labels, references, cache information) spread over the last 7 days, bulk-loaded with
   COPY, plus their sampling decisions (the real `Sampler`). The jobs' state is then
   brought up to date the way earlier runs would leave it: one `job_outcomes` row per
   candidate trace and job and a `job_state` watermark at the newest trace. Those rows are
   written by COPY with outcome values derived from the generator's known facts (exact
   retrieval metrics from the known rank of the relevant document, the stored cache flag
   and judge latency; plausible values for ROUGE/BLEU/similarity/semantic cache hits), not
   computed by the evaluators: a real warm-up over 1M traces would have to encode 1M
   questions with MiniLM (see the measured encode rate in the output: hours on 2 cores).
   The timed part does not depend on those values, only on how many rows there are.
   Earlier runs would also have left the vectors of what they encoded in the `embeddings`
   table; the benchmark computes, with the real model, those the timed runs read (the
   distinct questions and answers of the last 90 minutes of earlier traces and the
   questions of the newest 1,000 benchmark-sampled ones) and stores them the way a run
   does; older texts are read by no run and are not encoded.
   Then the process "restarts" (empty in-memory caches): the first run of the non-judge
   jobs loads the state (timed and reported as the first run after a restart), `--new`
   traces arrive (COPY), and ONE incremental run of all non-judge jobs
   (real_users_benchmark, judge_pipeline, ux, text_quality, embedding_quality,
   retrieval_health) is timed
   with the real offline MiniLM model, per job split into encoder time and the rest.
   Beside it: one batched encode of the new questions (fresh model call, no cache), which
   the UX job cannot avoid. Target: <= 10 s.
2. Scrape. `--series` quality series (4 families x series/4 points: metric x window x
   tenant) in the exporter's in-memory cache, timed with `generate_latest` (median of 21),
   against building the same families from `metric_results` on each scrape (4 stored runs
   per point = `--series` rows; newest row per metric/window/group, then the families),
   measured in the same run on its own fresh database. Targets: <= 200 ms and >= 5x.

Its parts: `monitor_traffic` (the traces and their COPY), `monitor_state` (the seeded job
state), `monitor_jobs` and `monitor_scrape` (the two timings), `monitor_report` (the
RESULTS.md section).

Run: `.venv/bin/python -m benchmarks.monitor [--traces N] [--new N] [--series N] [--keep-db]`
(PostgreSQL at RAGPULSE_TEST_POSTGRES_URL, default postgresql+psycopg://postgres@127.0.0.1:5432/test).
"""

from __future__ import annotations

import argparse
import os
from datetime import UTC, datetime, timedelta

from benchmarks.monitor_jobs import bench_jobs
from benchmarks.monitor_report import render, write_results
from benchmarks.monitor_scrape import bench_scrape
from collector.settings import load_settings
from collector.store.session import make_engine
from migrations.runner import upgrade
from tests.fixtures.db import create_postgres_database, drop_postgres_database


def _partitions(url: str) -> None:
    """The daily partitions of the generated week, as the service keeps them (rev. 0011)."""
    from collector.store import partitions

    engine = make_engine(url)
    today = datetime.now(UTC).date()
    with engine.begin() as conn:
        partitions.ensure_partitions(conn, [today - timedelta(days=i) for i in range(9)])
    engine.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=1_000_000, help="stored traces")
    parser.add_argument("--new", type=int, default=10_000, help="new traces before the run")
    parser.add_argument("--series", type=int, default=20_000, help="quality series scraped")
    parser.add_argument("--keep-db", action="store_true", help="keep the jobs database")
    parser.add_argument("--skip-jobs", action="store_true", help="only the scrape part")
    parser.add_argument(
        "--no-write", action="store_true", help="do not update benchmarks/RESULTS.md"
    )
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    settings = load_settings()
    command = ".venv/bin/python -m benchmarks.monitor" + (" " + " ".join(argv) if argv else "")
    scraped = bench_scrape(args.series, settings)
    print(
        f"scrape: cache {scraped.cache_ms:.1f} ms, database {scraped.database_ms:.1f} ms",
        flush=True,
    )
    jobs = None
    if not args.skip_jobs:
        url = create_postgres_database("ragpulse_bench_monitor")
        try:
            upgrade(url)
            _partitions(url)
            jobs = bench_jobs(url, settings, args.traces, args.new)
        finally:
            if args.keep_db:
                print(f"database kept: {url}")
            else:
                drop_postgres_database(url)
    section = render(jobs, scraped, command, load_before)
    print()
    print(section)
    if not args.no_write:
        write_results(section)
    return 0


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
