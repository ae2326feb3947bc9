"""Tier 1 on real traffic: retrieval metrics over traces sampled for the benchmark.

Ground truth is the trace's `relevance`/`relevant_ids`, what feedback added later
(feedback bumps the trace's `updated_at`, so the trace is re-evaluated), or the
`shown_url` of seed 004 §7, in the order of `ground_truth.priority`
(`evaluators.ground_truth`; the mapping is `ragpulse.job_setup.sample_mapper`).
"""

from __future__ import annotations

from collector.jobs.run.definition import JobDefinition
from collector.jobs.traces.candidates import sampled_for
from collector.settings import Settings

NAME = "real_users_benchmark"
METRICS = (
    "hit_rate@1",
    "hit_rate@5",
    "hit_rate@10",
    "mrr",
    "ndcg@5",
    "ndcg@10",
    "recall@1",
    "recall@3",
    "recall@5",
    "recall@10",
    "precision@1",
    "precision@3",
    "precision@5",
    "precision@10",
)
"""Seed 004 §4.3 in full: hit_rate@1/5/10, mrr, recall@K and precision@K for K = 1, 3, 5,
10, ndcg@5/10."""


def definition(settings: Settings) -> JobDefinition:
    return JobDefinition(
        name=NAME,
        metrics=METRICS,
        description="retrieval metrics over traces sampled for the real-users benchmark",
        candidates=sampled_for(NAME),
    )
