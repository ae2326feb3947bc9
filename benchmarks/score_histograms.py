"""Score-histogram benchmark: what the exemplar histograms cost per evaluated trace and per
scrape (issue 18).

Three parts, each against a reference measured in the same run:

- **In the job.** A fresh SQLite database gets `--traces` real-users-benchmark traces
  (ranked contexts, graded ground truth, spread over 6 hours, `--tenants` tenants). The
  real `real_users_benchmark` job (14 metrics, windows 1h/24h/7d) runs once with the
  `ScoreHistograms` observer attached, as the service wires it; the time spent inside
  `observe` is measured and reported per evaluated trace and as a share of the job run's
  wall time (the reference: everything the job does for that trace, scoring, storing,
  aggregating).
- **Observer alone.** `--synthetic` evaluated traces with 10 metrics and `--tenants`
  tenants, in batches of 500 (a run's size), through `observe`: ns per trace (median of
  5 passes, a fresh observer each), against `json.dumps` of the trace's stored outcome
  record (what the job writes to `job_outcomes.outcomes` for every trace).
- **Scrape.** `/metrics` of those histograms in OpenMetrics (with exemplars) and in the
  text format: series, bytes and render time (median of 5), next to the quality families
  of the job run for scale; and the series when 2,000 distinct tenant values arrive (the
  label bound keeps them at `labels.max_values` + `other` + overall).

Run: `.venv/bin/python -m benchmarks.score_histograms [--traces N] [--synthetic N]
[--tenants N]`.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.openmetrics import exposition as openmetrics
from sqlalchemy import insert

from collector.jobs.outcomes.codec import encode
from collector.jobs.recording.observers import Evaluated
from collector.jobs.run.engine import IncrementalJob
from collector.jobs.scheduler import definitions
from collector.settings import load_settings
from collector.store.models import SampleRecord, Trace
from collector.store.session import make_engine
from evaluators.outcome import Score, Skipped
from exporters.prometheus import QualityCollector
from exporters.quality import ResultsCache
from exporters.score_histograms import ScoreHistograms
from migrations.runner import upgrade
from ragpulse.job_setup import job_environment, label_limits

JOB = "real_users_benchmark"
METRICS = (
    "hit_rate@1",
    "hit_rate@5",
    "mrr",
    "ndcg@10",
    "recall@5",
    "precision@5",
    "faithfulness",
    "answer_relevance",
    "rouge1_f",
    "judge_latency_ms",
)
"""The synthetic traces' metrics: ten per trace, of four units."""
BATCH = 500


class TimedObserver:
    """`ScoreHistograms.observe` with a stopwatch around it."""

    def __init__(self, inner: ScoreHistograms) -> None:
        self.inner = inner
        self.seconds = 0.0
        self.traces = 0

    def observe(self, evaluated: Sequence[Evaluated]) -> None:
        started = time.perf_counter()
        self.inner.observe(evaluated)
        self.seconds += time.perf_counter() - started
        self.traces += len(evaluated)


def _load(url: str, traces: int, tenants: int, now: datetime) -> None:
    rng = random.Random(7)
    rows, samples = [], []
    for i in range(traces):
        ts = now - timedelta(hours=6) * rng.random()
        rank = rng.choice([0, 0, 1, 2, 4, 9, None])
        relevant = f"d{rank}" if rank is not None else "zz"
        trace_id = f"{rng.getrandbits(128):032x}"  # OTel-shaped trace ids
        rows.append(
            {
                "trace_id": trace_id,
                "timestamp": ts,
                "received_at": ts,
                "updated_at": ts,
                "question": f"question {i}",
                "contexts": [{"id": f"d{k}", "content": f"doc {k}"} for k in range(10)],
                "relevance": {relevant: 2},
                "tags": {"tenant": f"tenant-{rng.randrange(tenants)}"},
            }
        )
        samples.append({"trace_id": trace_id, "purpose": JOB, "sampled_at": ts})
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.execute(insert(Trace), rows)
        conn.execute(insert(SampleRecord), samples)
    engine.dispose()


def in_job(workdir: Path, traces: int, tenants: int) -> dict[str, Any]:
    """One real job run with the observer attached: its share of the run."""
    now = datetime.now(UTC).replace(microsecond=0)
    url = f"sqlite:///{workdir / 'job.db'}"
    upgrade(url)
    _load(url, traces, tenants, now)
    settings = load_settings(database={"url": url})
    engine = make_engine(url)
    cache = ResultsCache()
    observer = TimedObserver(ScoreHistograms("tenant", label_limits(settings)))
    env = job_environment(settings, engine, results=cache, embedder=None, judge=None)
    env.observers = (observer,)
    job = IncrementalJob(definitions(settings)[JOB], env)
    started = time.perf_counter()
    report = job.run(now)
    job_s = time.perf_counter() - started
    if report.status != "ok" or observer.traces != traces:
        raise SystemExit(f"job run failed or observed {observer.traces} traces: {report}")
    job.publish()
    quality = QualityCollector(cache, settings.scheduler.group_labels, label_limits(settings))
    engine.dispose()
    return {
        "job_s": job_s,
        "observe_s": observer.seconds,
        "traces": traces,
        "metrics": len(definitions(settings)[JOB].metrics),
        "histograms": observer.inner,
        "quality_bytes": len(quality.render()),
    }


def _synthetic(count: int, tenants: int, seed: int = 3) -> list[Evaluated]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        outcomes: dict[str, Any] = {}
        for metric in METRICS:
            if metric == "judge_latency_ms":
                outcomes[metric] = Score(rng.lognormvariate(6.5, 1.0))
            elif rng.random() < 0.05:
                outcomes[metric] = Skipped("no ground truth")
            else:
                outcomes[metric] = Score(rng.random())
        groups = MappingProxyType({"tenant": f"tenant-{rng.randrange(tenants)}"})
        out.append(Evaluated(JOB, f"{rng.getrandbits(128):032x}", 1.7e9 + i, groups, outcomes))
    return out


def _median(fn: Callable[[], object], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def observer_alone(count: int, tenants: int) -> dict[str, float]:
    items = _synthetic(count, tenants)
    batches = [items[i : i + BATCH] for i in range(0, len(items), BATCH)]

    def observe() -> None:
        histograms = ScoreHistograms()
        for batch in batches:
            histograms.observe(batch)

    def store_json() -> None:
        for item in items:
            json.dumps(
                {
                    "job": item.job,
                    "trace_id": item.trace_id,
                    "groups": dict(item.groups),
                    "outcomes": {m: encode(o) for m, o in item.outcomes.items()},
                }
            )

    observe_s, json_s = _median(observe), _median(store_json)
    return {"observe_ns": observe_s / count * 1e9, "json_ns": json_s / count * 1e9}


def openmetrics_latest(registry: CollectorRegistry) -> bytes:
    body: bytes = openmetrics.generate_latest(registry)  # type: ignore[no-untyped-call]
    return body


def scrape(histograms: ScoreHistograms) -> dict[str, float]:
    registry = CollectorRegistry()
    registry.register(histograms)
    om_body, text_body = openmetrics_latest(registry), generate_latest(registry)
    return {
        "series": sum(1 for line in text_body.splitlines() if not line.startswith(b"#")),
        "exemplars": om_body.count(b" # {"),
        "om_bytes": len(om_body),
        "text_bytes": len(text_body),
        "om_ms": _median(lambda: openmetrics_latest(registry)) * 1000,
        "text_ms": _median(lambda: generate_latest(registry)) * 1000,
    }


def bounded_series(tenants: int, distinct: int) -> int:
    histograms = ScoreHistograms()
    items = _synthetic(20_000, tenants) + _synthetic(distinct, distinct, seed=5)
    for i in range(0, len(items), BATCH):
        histograms.observe(items[i : i + BATCH])
    return int(scrape(histograms)["series"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=20_000, help="traces of the job run")
    parser.add_argument("--synthetic", type=int, default=100_000, help="traces, observer alone")
    parser.add_argument("--tenants", type=int, default=50)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        job = in_job(Path(tmp), args.traces, args.tenants)
    per_trace_us = job["observe_s"] / job["traces"] * 1e6
    job_per_trace_us = job["job_s"] / job["traces"] * 1e6
    print(
        f"\nIn the job: {JOB}, {job['traces']:,} traces, {job['metrics']} metrics, "
        f"{args.tenants} tenants"
    )
    print("| job run | observe (total) | observe per trace | job per trace | share |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    print(
        f"| {job['job_s']:.2f} s | {job['observe_s'] * 1000:.0f} ms | {per_trace_us:.1f} us "
        f"| {job_per_trace_us:.0f} us | {job['observe_s'] / job['job_s']:.2%} |"
    )
    alone = observer_alone(args.synthetic, args.tenants)
    print(
        f"\nObserver alone: {args.synthetic:,} traces, {len(METRICS)} metrics, "
        f"{args.tenants} tenants, batches of {BATCH}"
    )
    print("| observe per trace | json.dumps of the stored outcomes | ratio |")
    print("| ---: | ---: | ---: |")
    print(
        f"| {alone['observe_ns']:,.0f} ns | {alone['json_ns']:,.0f} ns "
        f"| {alone['observe_ns'] / alone['json_ns']:.2f}x |"
    )
    figures = scrape(job["histograms"])
    print(
        "\nScrape of the job's histograms "
        f"(the run's quality families, pre-rendered: {job['quality_bytes']:,} bytes)"
    )
    print("| series | exemplars | OpenMetrics | render | text format | render |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    print(
        f"| {figures['series']:,.0f} | {figures['exemplars']:,.0f} "
        f"| {figures['om_bytes'] / 1e3:,.0f} kB | {figures['om_ms']:.1f} ms "
        f"| {figures['text_bytes'] / 1e3:,.0f} kB | {figures['text_ms']:.1f} ms |"
    )
    bounded = bounded_series(args.tenants, 2_000)
    print(
        f"\nSeries of {len(METRICS)} metrics after 2,000 more distinct tenant values: "
        f"{bounded:,} (bound: {len(METRICS)} x (50 + 2) x 14 = {len(METRICS) * 52 * 14:,})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
