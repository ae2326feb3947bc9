"""Reciprocal rank (trec_eval `recip_rank`): how high is the first relevant document?

    RR(q)   = 1 / min{ r : grade(q, d_r) >= t }   (0 when no retrieved document is relevant)
    RR@k(q) = the same over the top k only

`mrr` looks at the whole retrieved list; `mrr@k` stops at rank k.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from evaluators.outcome import Outcome
from evaluators.registry import EvalContext, MetricSpec, register
from evaluators.retrieval.judgments import Judgments
from evaluators.retrieval.metric import outcomes
from evaluators.sample import Sample


def reciprocal_rank(
    gains: NDArray[np.float64], k: int | None = None, threshold: int = 1
) -> NDArray[np.float64]:
    """Per row of `gains` (queries x ranks): 1 / rank of the first grade >= threshold, else 0."""
    relevant = gains[:, :k] >= threshold
    if relevant.shape[1] == 0:
        return np.zeros(relevant.shape[0], dtype=np.float64)
    first = relevant.argmax(axis=1)
    rr: NDArray[np.float64] = np.where(relevant.any(axis=1), 1.0 / (first + 1.0), 0.0)
    return rr


def compute(samples: Sequence[Sample], ctx: EvalContext, k: int | None) -> list[Outcome]:
    if k is not None and k < 1:
        raise ValueError("mrr@k needs a positive cutoff")

    def kernel(j: Judgments, threshold: int) -> NDArray[np.float64]:
        if k is None:  # the whole list, which may be deeper than the built matrix
            rr: NDArray[np.float64] = 1.0 / j.first_relevant_rank(threshold)
            return rr
        return reciprocal_rank(j.gains, k, threshold)

    return outcomes(samples, ctx, kernel, k)


SPEC = register(
    MetricSpec(
        family="mrr",
        kind="per_sample",
        compute=compute,
        needs="ranked contexts + ground truth",
        direction="higher",
        unit="score",
        description="Mean reciprocal rank of the first relevant document (trec_eval recip_rank).",
        cutoff="optional",
    )
)
