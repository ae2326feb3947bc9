"""NDCG@k (trec_eval `ndcg_cut_k`): graded gain, discounted by rank, against the ideal.

    DCG@k(q)  = sum_{r=1..k} g(q, d_r) / log2(r + 1),   g = max(judged grade, 0)
    IDCG@k(q) = the same over the ideal ranking: ALL judged documents of q (retrieved or
                not) sorted by grade, descending
    NDCG@k(q) = DCG@k(q) / IDCG@k(q)

The gain is the raw grade whatever the relevance threshold (trec_eval's `-l` changes
which documents are relevant, not the NDCG gains); a query is scored only when it has a
document with grade >= threshold, so IDCG > 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from evaluators.outcome import Outcome
from evaluators.registry import EvalContext, MetricSpec, register
from evaluators.retrieval.judgments import Judgments
from evaluators.retrieval.metric import outcomes, require_k
from evaluators.sample import Sample


@lru_cache(maxsize=64)
def _discounts(n: int) -> NDArray[np.float64]:
    discounts: NDArray[np.float64] = 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))
    discounts.flags.writeable = False
    return discounts


def dcg_at_k(gains: NDArray[np.float64], k: int) -> NDArray[np.float64]:
    """Per row of `gains` (queries x ranks): sum of gain / log2(rank + 1) over the top k."""
    top = gains[:, :k]
    dcg: NDArray[np.float64] = top @ _discounts(top.shape[1])
    return dcg


def ndcg_at_k(
    gains: NDArray[np.float64], ideal: NDArray[np.float64], k: int
) -> NDArray[np.float64]:
    """Per row: DCG@k of `gains` / DCG@k of `ideal` (grades sorted descending); 0 if IDCG is 0."""
    dcg = dcg_at_k(np.maximum(gains[:, :k], 0.0), k)
    idcg = dcg_at_k(np.maximum(ideal[:, :k], 0.0), k)
    ndcg: NDArray[np.float64] = np.divide(dcg, idcg, out=np.zeros_like(dcg), where=idcg > 0)
    return ndcg


def compute(samples: Sequence[Sample], ctx: EvalContext, k: int | None) -> list[Outcome]:
    cutoff = require_k("ndcg", k)

    def kernel(j: Judgments, threshold: int) -> NDArray[np.float64]:
        return ndcg_at_k(j.gains, j.ideal, cutoff)

    return outcomes(samples, ctx, kernel, cutoff)


SPEC = register(
    MetricSpec(
        family="ndcg",
        kind="per_sample",
        compute=compute,
        needs="ranked contexts + ground truth",
        direction="higher",
        unit="score",
        description="Normalized discounted cumulative gain at k, graded (trec_eval ndcg_cut_k).",
        cutoff="required",
    )
)
