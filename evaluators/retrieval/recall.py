"""Recall@k (trec_eval `recall_k`): the share of all relevant documents found in the top k.

    R@k(q) = |{ r <= k : grade(q, d_r) >= t }| / |{ d judged : grade(q, d) >= t }|

The divisor counts every relevant judged document, retrieved or not. Queries without a
relevant document are skipped (undefined), as trec_eval leaves them out of averages.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from evaluators.outcome import Outcome
from evaluators.registry import EvalContext, MetricSpec, register
from evaluators.retrieval.judgments import Judgments
from evaluators.retrieval.metric import outcomes, require_k
from evaluators.sample import Sample


def recall_at_k(
    gains: NDArray[np.float64], n_relevant: NDArray[np.int64], k: int, threshold: int = 1
) -> NDArray[np.float64]:
    """Per row: relevant documents in the top k / `n_relevant` (0 where n_relevant is 0)."""
    found = (gains[:, :k] >= threshold).sum(axis=1).astype(np.float64)
    recall: NDArray[np.float64] = np.divide(
        found, n_relevant, out=np.zeros_like(found), where=n_relevant > 0
    )
    return recall


def compute(samples: Sequence[Sample], ctx: EvalContext, k: int | None) -> list[Outcome]:
    cutoff = require_k("recall", k)

    def kernel(j: Judgments, threshold: int) -> NDArray[np.float64]:
        return recall_at_k(j.gains, j.n_relevant(threshold), cutoff, threshold)

    return outcomes(samples, ctx, kernel, cutoff)


SPEC = register(
    MetricSpec(
        family="recall",
        kind="per_sample",
        compute=compute,
        needs="ranked contexts + ground truth",
        direction="higher",
        unit="ratio",
        description="Share of all relevant documents that are in the top k (trec_eval recall_k).",
        cutoff="required",
    )
)
