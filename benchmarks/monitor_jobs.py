"""The jobs part of the monitoring benchmark: stored traces and seeded state, the
embeddings earlier runs would have stored, then a restart, the first run (which loads
the state), new traces and one timed incremental run of every non-judge job, each split
into encoder time and the rest."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine

from benchmarks.monitor_state import NON_JUDGE, seed_job_state
from benchmarks.monitor_traffic import copy_traces
from collector.jobs.run.definition import JobReport
from collector.jobs.run.embeddings import RecentEmbeddings
from collector.jobs.scheduler import build_runner
from collector.settings import Settings
from collector.store.session import make_engine, make_session_factory
from exporters.quality import ResultsCache
from ragpulse.job_setup import job_environment, make_embedder

SPAN = timedelta(days=7)


@dataclass
class JobRun:
    """One job's run and what the shared embedder did during it."""

    report: JobReport
    encoded: int
    encode_s: float
    loaded: int
    store_s: float


@dataclass
class JobFigures:
    traces: int
    new: int
    load_s: float
    seed_s: float
    seeded_texts: int
    seed_encode_s: float
    first_run_s: float
    first: list[JobRun]
    encode_s: float
    encode_n: int
    run_s: float
    runs: list[JobRun]
    distinct_new: int
    outcome_rows: dict[str, int]
    stored_embeddings: int
    model: str  # the embedder's model name, "<model>@bf16" in bfloat16

    @property
    def encoded_in_run(self) -> int:
        return sum(r.encoded for r in self.runs)

    @property
    def encode_in_run_s(self) -> float:
        return sum(r.encode_s for r in self.runs)


def run_jobs(runner: Any, embedder: RecentEmbeddings) -> tuple[float, list[JobRun]]:
    """Run the non-judge jobs one after the other (as `run_many` does), noting per job what
    the shared embedder encoded and read from the embeddings table."""
    runs = []
    started = time.perf_counter()
    for name in NON_JUDGE:
        before = (embedder.encoded, embedder.encode_s, embedder.loaded, embedder.store_s)
        report = runner.run(name)
        runs.append(
            JobRun(
                report,
                embedder.encoded - before[0],
                embedder.encode_s - before[1],
                embedder.loaded - before[2],
                embedder.store_s - before[3],
            )
        )
    total = time.perf_counter() - started
    _check([r.report for r in runs])
    return total, runs


def earlier_texts(engine: Engine, since: datetime, benchmark_questions: int) -> list[str]:
    """Distinct texts the jobs' earlier runs would have encoded and stored, as far as the
    timed runs read them: questions and answers of the earlier traces since `since` (the
    UX look-back of the new traces and the recent session candidates of the UX dataset
    metrics) and the questions of the newest `benchmark_questions` benchmark-sampled
    traces (embedding_quality's dataset candidates)."""
    from sqlalchemy import select

    from collector.store.models import SampleRecord, Trace

    with make_session_factory(engine)() as session:
        texts: dict[str, None] = {}
        for question, answer in session.execute(
            select(Trace.question, Trace.answer).where(Trace.timestamp >= since)
        ):
            texts[question] = None
            if answer:
                texts[answer] = None
        for (question,) in session.execute(
            select(Trace.question)
            .join(
                SampleRecord,
                (SampleRecord.trace_id == Trace.trace_id)
                & (SampleRecord.purpose == "real_users_benchmark"),
            )
            .order_by(Trace.timestamp.desc())
            .limit(benchmark_questions)
        ):
            texts[question] = None
    return list(texts)


def bench_jobs(url: str, settings: Settings, traces: int, new: int) -> JobFigures:
    from collector.store.embeddings import SqlEmbeddingStore

    now = datetime.now(UTC)
    earlier_end = now - timedelta(minutes=10)
    started = time.perf_counter()
    facts = copy_traces(
        url, traces, now - SPAN, earlier_end, seed=1, prefix="old", settings=settings
    )
    load_s = time.perf_counter() - started
    print(f"loaded {traces:,} traces in {load_s:.1f}s", flush=True)
    started = time.perf_counter()
    outcome_rows = seed_job_state(url, facts, settings)
    seed_s = time.perf_counter() - started
    print(f"seeded job state {outcome_rows} in {seed_s:.1f}s", flush=True)
    del facts

    engine = make_engine(url)
    try:
        store = SqlEmbeddingStore(make_session_factory(engine))
        inner = make_embedder(settings)
        inner.encode(["model warm-up"])
        # Earlier runs stored the vectors of what they encoded; compute those the timed
        # runs read, with the real model, and store them the way a run does.
        since = now - timedelta(seconds=settings.ux.cache_lookback_s) - timedelta(minutes=30)
        texts = earlier_texts(engine, since, 1000)
        seeding = RecentEmbeddings(inner, store=store)
        seeding.encode(texts)
        print(
            f"seeded {len(texts):,} embeddings of earlier texts in {seeding.encode_s:.1f}s",
            flush=True,
        )

        # A restart: empty memory, the embeddings table as earlier runs left it.
        embedder = RecentEmbeddings(inner, settings.embeddings.cache_texts, store=store)
        env = job_environment(settings, engine, results=ResultsCache(), embedder=embedder)
        runner = build_runner(settings, engine, env, names=NON_JUDGE)
        first_run_s, first = run_jobs(runner, embedder)
        print(f"first run after start-up (loads the state) {first_run_s:.1f}s", flush=True)

        arrive = datetime.now(UTC)
        new_facts = copy_traces(
            url,
            new,
            arrive - timedelta(minutes=5),
            arrive - timedelta(seconds=1),
            seed=2,
            prefix="new",
            settings=settings,
        )
        questions = _new_questions(engine, [f.trace_id for f in new_facts])
        started = time.perf_counter()
        inner.encode(questions)
        encode_s = time.perf_counter() - started
        print(f"one batched encode of {len(questions):,} new questions {encode_s:.1f}s", flush=True)

        run_s, runs = run_jobs(runner, embedder)
        print(f"incremental run of {', '.join(NON_JUDGE)}: {run_s:.1f}s", flush=True)
        stored = store.count()
    finally:
        engine.dispose()
    return JobFigures(
        traces,
        new,
        load_s,
        seed_s,
        len(texts),
        seeding.encode_s,
        first_run_s,
        first,
        encode_s,
        len(questions),
        run_s,
        runs,
        len(set(questions)),
        outcome_rows,
        stored,
        str(inner.model_name),
    )


def _check(reports: list[JobReport]) -> None:
    failed = [f"{r.job}: {r.message}" for r in reports if r.status != "ok"]
    if failed:
        raise SystemExit("job run failed: " + "; ".join(failed))


def _new_questions(engine: Engine, trace_ids: list[str]) -> list[str]:
    from sqlalchemy import select

    from collector.store.models import Trace

    with make_session_factory(engine)() as session:
        return list(session.scalars(select(Trace.question).where(Trace.trace_id.in_(trace_ids))))
