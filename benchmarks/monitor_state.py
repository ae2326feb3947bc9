"""The jobs' state as earlier runs would have left it, written by COPY: one
`job_outcomes` row per candidate trace and non-judge job and a `job_state` watermark at
the newest trace. The outcome values follow from the generator's known facts (exact
retrieval metrics from the known rank of the relevant document; plausible values
elsewhere): the timed runs depend on how many rows there are, not on their values, and
computing them for real would take hours of encoding."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

import orjson
import psycopg

from benchmarks.monitor_traffic import Facts, psycopg_url
from collector.jobs.scheduler import JOB_NAMES, JUDGE_JOBS
from collector.settings import Settings
from evaluators.registry import resolve

_CANDIDATES: dict[str, Callable[[Facts], bool]] = {
    "real_users_benchmark": lambda f: f.benchmark,
    "embedding_quality": lambda f: f.benchmark,
    "judge_pipeline": lambda f: f.labelled,
    "text_quality": lambda f: f.reference,
    "ux": lambda f: True,
    "retrieval_health": lambda f: True,
}
NON_JUDGE = tuple(j for j in JOB_NAMES if j in _CANDIDATES and j not in JUDGE_JOBS)
"""The jobs the benchmark seeds and times: those scoring traces without the LLM judge
(not judge_agreement, external or canary, which read other tables)."""


def _retrieval(metric: str, rank: int) -> float:
    base, _, k_text = metric.partition("@")
    k = int(k_text) if k_text else None
    hit = rank > 0 and (k is None or rank <= k)
    if base == "mrr":
        return 1.0 / rank if hit else 0.0
    if base == "ndcg":
        return 1.0 / math.log2(rank + 1) if hit else 0.0
    if base == "precision":
        return 1.0 / (k or 1) if hit else 0.0
    return 1.0 if hit else 0.0


def seeded_outcome(metric: str, f: Facts, rng: random.Random) -> Any:
    """The stored outcome (job_outcomes format) an earlier run would have left."""
    family = metric.partition("@")[0]
    if family in ("hit_rate", "mrr", "ndcg", "precision", "recall"):
        return _retrieval(metric, f.rank)
    if family == "retrieval_empty_rate":
        return 0.0  # every generated trace retrieved five contexts
    if family == "cache_hit_rate_actual":
        return 1.0 if f.cache_hit else 0.0
    if family == "cache_hit_rate":
        return 1.0 if rng.random() < 0.3 else 0.0
    if family == "judge_latency_ms":
        return f.judge_latency if f.judge_latency is not None else {"skipped": "no latency"}
    if family == "bleu":
        return round(rng.uniform(5, 90), 3)
    return round(rng.uniform(0.2, 1.0), 4)


def job_candidates(job: str, f: Facts) -> bool:
    return bool(_CANDIDATES[job](f))


def seed_job_state(url: str, facts: list[Facts], settings: Settings) -> dict[str, int]:
    """job_outcomes rows for every candidate of every non-judge job, and their watermarks."""
    from collector.jobs.scheduler import definitions

    defs = definitions(settings)
    rng = random.Random(7)
    counts: dict[str, int] = {}
    watermark = max(f.updated for f in facts)
    with psycopg.connect(psycopg_url(url)) as conn, conn.cursor() as cur:
        for job in NON_JUDGE:
            per_sample = [m for m in defs[job].metrics if resolve(m).spec.kind != "dataset"]
            counts[job] = 0
            with cur.copy(
                "COPY job_outcomes (job, trace_id, trace_updated_at, ts, groups, outcomes) "
                "FROM STDIN"
            ) as copy:
                for f in facts:
                    if not job_candidates(job, f):
                        continue
                    outcomes = {m: seeded_outcome(m, f, rng) for m in per_sample}
                    copy.write_row(
                        (
                            job,
                            f.trace_id,
                            f.updated,
                            f.ts,
                            orjson.dumps({"tenant": f.tenant}).decode(),
                            orjson.dumps(outcomes).decode(),
                        )
                    )
                    counts[job] += 1
            cur.execute(
                "INSERT INTO job_state (job, watermark, last_run_at, last_status, last_message) "
                "VALUES (%s, %s, %s, 'ok', 'seeded by benchmarks/monitor.py')",
                (job, watermark, watermark),
            )
        conn.commit()
        cur.execute("ANALYZE job_outcomes")
        conn.commit()
    return counts
