"""Label-cardinality benchmark: what one client's bad `tenant` tag does to a job and /metrics.

A fresh SQLite database gets `--traces` retrieval traces sampled for the real-users
benchmark (ranked contexts, graded ground truth, spread over the last 6 hours). In each
scenario their `tenant` tag takes a different number of distinct values:

- `3 tenants`: the reference, three real tenants (50/30/20% of the traffic);
- `D distinct` (one row per `--distinct` value): the three real tenants keep half of the
  traffic, the other half carries a tag that is different on every trace (a client that
  puts a user id there), so D distinct values in all.

Per scenario the real `real_users_benchmark` job runs once (`IncrementalJob`, the shipped
windows 1h/24h/7d) and publishes to the exporter's `ResultsCache`; then the exporter's
`QualityCollector` renders `/metrics`. Reported: `metric_results` rows the run wrote,
quality series and bytes of the scrape, the render time (median of 5, the cache changed
before each so nothing is served pre-rendered), the job's wall time and its peak Python
memory (tracemalloc), and each figure as a ratio to the reference scenario of the same run.
A second pass runs the job with a 1h window over `--rounds` hours, each hour bringing
`--per-hour` traces (default: the largest `--distinct`), half of them with fresh distinct
values: the job's retained memory (tracemalloc, after each run) must stay flat, not grow
with every value ever seen.

Run: `.venv/bin/python -m benchmarks.cardinality [--traces N] [--distinct 2000 20000]
[--rounds N] [--per-hour N]`.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, func, insert, select

from collector.jobs.run.engine import IncrementalJob
from collector.jobs.scheduler import definitions
from collector.settings import Settings, load_settings
from collector.store.models import MetricResult, SampleRecord, Trace
from collector.store.session import make_engine
from exporters.prometheus import QualityCollector
from exporters.quality import ResultsCache
from migrations.runner import upgrade
from ragpulse.job_setup import job_environment, label_limits

REAL_TENANTS = (("acme", 0.5), ("globex", 0.3), ("initech", 0.2))
JOB = "real_users_benchmark"


@dataclass(frozen=True)
class Figures:
    scenario: str
    distinct: int
    results: int
    series: int
    scrape_bytes: int
    render_ms: float
    job_s: float
    job_peak_mb: float


def _tenant(i: int, rng: random.Random, distinct: int, traces: int) -> str:
    """Half the traces to the real tenants, the other half a value of their own."""
    junk = distinct - len(REAL_TENANTS)
    if junk > 0 and i % 2 == 1 and i // 2 < junk:
        return f"user-{rng.getrandbits(48):012x}"
    r = rng.random()
    for name, share in REAL_TENANTS:
        if r < share:
            return name
        r -= share
    return REAL_TENANTS[-1][0]


def _rows(
    start: int, count: int, now: datetime, span: timedelta, distinct: int, seed: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rng = random.Random(seed)
    traces, samples = [], []
    for i in range(start, start + count):
        ts = now - span * rng.random()
        rank = rng.choice([0, 0, 1, 2, 4, 9, None])
        docs = [{"id": f"d{k}", "content": f"doc {k}"} for k in range(10)]
        relevant = f"d{rank}" if rank is not None else "zz"
        trace_id = f"c{i:08d}"
        traces.append(
            {
                "trace_id": trace_id,
                "timestamp": ts,
                "received_at": ts,
                "updated_at": ts,
                "question": f"question {i}",
                "answer": f"answer {i}",
                "contexts": docs,
                "relevance": {relevant: 2},
                "tags": {"tenant": _tenant(i - start, rng, distinct, count)},
            }
        )
        samples.append({"trace_id": trace_id, "purpose": JOB, "sampled_at": ts})
    return traces, samples


def _load(engine: Engine, traces: list[dict[str, Any]], samples: list[dict[str, Any]]) -> None:
    with engine.begin() as conn:
        conn.execute(insert(Trace), traces)
        conn.execute(insert(SampleRecord), samples)


def _render_ms(collector: QualityCollector, cache: ResultsCache) -> tuple[float, bytes]:
    times, body = [], b""
    for _ in range(5):
        cache.update([])  # a new cache version: the next render formats every series again
        started = time.perf_counter()
        body = collector.render()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), body


def _series(body: bytes) -> int:
    return sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))


def _job(settings: Settings, engine: Engine, cache: ResultsCache) -> IncrementalJob:
    env = job_environment(settings, engine, results=cache, embedder=None, judge=None)
    return IncrementalJob(definitions(settings)[JOB], env)


def _run(job: IncrementalJob, now: datetime) -> tuple[float, float]:
    gc.collect()
    tracemalloc.start()
    started = time.perf_counter()
    report = job.run(now)
    seconds = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    if report.status != "ok":
        raise SystemExit(f"job run failed: {report}")
    job.publish()
    return seconds, peak


def scenario(workdir: Path, name: str, distinct: int, traces: int, now: datetime) -> Figures:
    settings = load_settings()
    url = f"sqlite:///{workdir / (name.replace(' ', '_') + '.db')}"
    upgrade(url)
    engine = make_engine(url)
    _load(engine, *_rows(0, traces, now, timedelta(hours=6), distinct, seed=7))
    cache = ResultsCache()
    job = _job(settings, engine, cache)
    job_s, peak = _run(job, now)
    with engine.connect() as conn:
        results = conn.execute(select(func.count()).select_from(MetricResult)).scalar_one()
    collector = QualityCollector(cache, settings.scheduler.group_labels, label_limits(settings))
    render_ms, body = _render_ms(collector, cache)
    figures = Figures(name, distinct, results, _series(body), len(body), render_ms, job_s, peak)
    engine.dispose()
    return figures


def rounds(workdir: Path, count: int, traces: int, distinct: int, now: datetime) -> list[float]:
    """Retained memory of a job (MB, after each run) when every hour brings `traces`
    traces with fresh distinct values and the window is 1h, so the rows of earlier hours
    leave it: what stays must not grow with every value ever seen."""
    settings = load_settings(scheduler={"windows": "1h"})
    url = f"sqlite:///{workdir / 'rounds.db'}"
    upgrade(url)
    engine = make_engine(url)
    job = _job(settings, engine, ResultsCache())
    retained = []
    tracemalloc.start()
    for r in range(count):
        at = now + timedelta(hours=r)
        _load(engine, *_rows(r * traces, traces, at, timedelta(hours=1), distinct, seed=100 + r))
        if job.run(at).status != "ok":
            raise SystemExit("job run failed")
        job.publish()
        gc.collect()
        retained.append(tracemalloc.get_traced_memory()[0] / 2**20)
    tracemalloc.stop()
    engine.dispose()
    return retained


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=40_000, help="traces per scenario")
    parser.add_argument("--distinct", type=int, nargs="+", default=[2_000, 20_000])
    parser.add_argument("--rounds", type=int, default=8, help="hours of the memory pass")
    parser.add_argument(
        "--per-hour",
        type=int,
        default=None,
        help="traces per hour in the memory pass (default: the largest --distinct)",
    )
    args = parser.parse_args(argv)
    now = datetime.now(UTC).replace(microsecond=0)
    rows: list[Figures] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, distinct in [("3 tenants", 3)] + [(f"{d} distinct", d) for d in args.distinct]:
            figures = scenario(Path(tmp), name, distinct, args.traces, now)
            rows.append(figures)
            print(f"  {figures}", flush=True)
        per_hour = args.per_hour or max(args.distinct)
        retained = rounds(Path(tmp), args.rounds, per_hour, per_hour, now)
    ref = rows[0]
    print(f"\n{args.traces} traces per scenario, job {JOB}, windows 1h/24h/7d, label tenant\n")
    print("| scenario | results/run | series | scrape | render | job run | job peak |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for f in rows:
        print(
            f"| {f.scenario} | {f.results:,} ({f.results / ref.results:.1f}x) "
            f"| {f.series:,} ({f.series / ref.series:.1f}x) "
            f"| {f.scrape_bytes / 1e6:.2f} MB ({f.scrape_bytes / ref.scrape_bytes:.1f}x) "
            f"| {f.render_ms:.0f} ms ({f.render_ms / ref.render_ms:.1f}x) "
            f"| {f.job_s:.2f} s ({f.job_s / ref.job_s:.1f}x) "
            f"| {f.job_peak_mb:.0f} MB ({f.job_peak_mb / ref.job_peak_mb:.1f}x) |"
        )
    print(
        f"\nJob memory retained after each hour of {per_hour} traces (half of them with a "
        f"value of their own), window 1h: "
        f"{', '.join(f'{m:.1f}' for m in retained)} MB"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
