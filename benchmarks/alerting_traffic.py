"""Simulated production traffic for the alerting benchmark: per-trace outcomes, as the jobs
hold them (`OutcomeColumns`), for weeks of a steady (or deliberately degraded) RAG system.

Per trace (three tenants taking 50/30/20% of the traffic, arrivals Poisson):

- retrieval ground truth on half of the traces (all of them evaluated: retrieval metrics
  cost nothing, so an alerting setup samples them all, `sampling.real_users_benchmark` 1):
  the rank of the relevant document is 1 with the tenant's hit rate (0.75 / 0.65 / 0.80),
  else 2-10 (geometric) or absent (not retrieved); the real_users_benchmark job's 14
  metrics follow from that one rank, so they move together as they do in production;
- 5% judged by the LLM judge: faithfulness, answer_relevance and context_relevance as Beta
  scores (means 0.85 / 0.80 / 0.70) sharing a per-trace quality factor (correlated);
- 20% with a reference: rougeL_f and semantic_similarity, Beta, correlated;
- the production judge's latency on every trace, log-normal (median 180 ms, sigma 0.5).

A drop multiplies a metric family's success chance (hit rate: the rank-1 probability;
judge scores: their mean) by (1 - size) from a time on, for one tenant or all.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchmarks.outcome_columns import OutcomeColumns
from evaluators.outcome import Score

TENANTS = (("acme", 0.5, 0.75), ("globex", 0.3, 0.65), ("initech", 0.2, 0.80))
RETRIEVAL = (
    "hit_rate@1", "hit_rate@5", "hit_rate@10", "mrr", "ndcg@5", "ndcg@10",
    "recall@1", "recall@3", "recall@5", "recall@10",
    "precision@1", "precision@3", "precision@5", "precision@10",
)  # fmt: skip
JUDGED = (("faithfulness", 0.85), ("answer_relevance", 0.80), ("context_relevance", 0.70))
TEXT = (("rougeL_f", 0.35), ("semantic_similarity", 0.75))
LATENCY = "judge_latency_ms"
METRICS = (*RETRIEVAL, *(m for m, _ in JUDGED), *(m for m, _ in TEXT), LATENCY)
H = 3600.0


@dataclass(frozen=True)
class Drop:
    metric: str
    """`hit_rate@1` (the rank-1 probability: every retrieval metric follows) or a judged
    metric's name."""
    size: float
    at: float
    tenant: str | None = None
    """None: every tenant."""


def _retrieval(rank: np.ndarray) -> dict[str, np.ndarray]:
    """The job's retrieval metrics of one relevant document at `rank` (0: not retrieved)."""
    found = rank > 0
    r = np.where(found, rank, 1)
    out = {}
    for k in (1, 3, 5, 10):
        hit = (found & (r <= k)).astype(float)
        out[f"hit_rate@{k}"] = hit
        out[f"recall@{k}"] = hit
        out[f"precision@{k}"] = hit / k
    out["mrr"] = np.where(found, 1.0 / r, 0.0)
    for k in (5, 10):
        out[f"ndcg@{k}"] = np.where(found & (r <= k), 1.0 / np.log2(r + 1.0), 0.0)
    return {m: out[m] for m in RETRIEVAL}


def _beta(rng: np.random.Generator, mean: np.ndarray, factor: np.ndarray) -> np.ndarray:
    """Beta scores with the given means (concentration 8), nudged by a shared factor."""
    m = np.clip(mean + 0.05 * factor, 0.02, 0.98)
    return rng.beta(m * 8.0, (1.0 - m) * 8.0)


def simulate(
    per_hour: float, hours: float, seed: int, drops: tuple[Drop, ...] = ()
) -> tuple[OutcomeColumns, int]:
    """Outcome columns of `hours` of traffic at `per_hour` traces an hour (and how many)."""
    rng = np.random.default_rng(seed)
    n = int(rng.poisson(per_hour * hours))
    ts = np.sort(rng.uniform(0.0, hours * H, n))
    tenant = rng.choice(len(TENANTS), n, p=[share for _, share, _ in TENANTS])
    p1 = np.array([hit for _, _, hit in TENANTS])[tenant]
    means = {m: np.full(n, mean) for m, mean in JUDGED}
    for drop in drops:
        hit = ts >= drop.at
        if drop.tenant is not None:
            hit &= tenant == [t for t, _, _ in TENANTS].index(drop.tenant)
        if drop.metric == "hit_rate@1":
            p1 = np.where(hit, p1 * (1 - drop.size), p1)
        else:
            means[drop.metric] = np.where(
                hit, means[drop.metric] * (1 - drop.size), means[drop.metric]
            )
    u = rng.random(n)
    tail = 2 + np.minimum(rng.geometric(0.35, n) - 1, 8)
    rank = np.where(u < p1, 1, np.where(rng.random(n) < 0.7, tail, 0))
    has_gt = rng.random(n) < 0.5
    retrieval = _retrieval(rank)
    judged = rng.random(n) < 0.05
    factor = rng.standard_normal(n)
    judge = {m: _beta(rng, means[m], factor) for m, _ in JUDGED}
    has_ref = rng.random(n) < 0.2
    text = {m: _beta(rng, np.full(n, mean), factor) for m, mean in TEXT}
    latency = rng.lognormal(np.log(180.0), 0.5, n)

    columns = OutcomeColumns(METRICS, ["tenant"])
    names = [t for t, _, _ in TENANTS]
    for i in range(n):
        outcomes = {LATENCY: Score(float(latency[i]))}
        if has_gt[i]:
            outcomes.update({m: Score(float(v[i])) for m, v in retrieval.items()})
        if judged[i]:
            outcomes.update({m: Score(float(v[i])) for m, v in judge.items()})
        if has_ref[i]:
            outcomes.update({m: Score(float(v[i])) for m, v in text.items()})
        t = float(ts[i])
        columns.put(f"t{i}", t, t, {"tenant": names[tenant[i]]}, outcomes)
    return columns, n
