"""Precision@k (trec_eval `P_k`): the share of the top k that is relevant.

    P@k(q) = |{ r <= k : grade(q, d_r) >= t }| / k

The divisor is k even when fewer than k documents were retrieved (missing ranks count
as not relevant), as trec_eval does.
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


def precision_at_k(gains: NDArray[np.float64], k: int, threshold: int = 1) -> NDArray[np.float64]:
    """Per row of `gains` (queries x ranks): relevant documents in the top k, divided by k."""
    precision: NDArray[np.float64] = (gains[:, :k] >= threshold).sum(axis=1) / float(k)
    return precision


def compute(samples: Sequence[Sample], ctx: EvalContext, k: int | None) -> list[Outcome]:
    cutoff = require_k("precision", k)

    def kernel(j: Judgments, threshold: int) -> NDArray[np.float64]:
        return precision_at_k(j.gains, cutoff, threshold)

    return outcomes(samples, ctx, kernel, cutoff)


SPEC = register(
    MetricSpec(
        family="precision",
        kind="per_sample",
        compute=compute,
        needs="ranked contexts + ground truth",
        direction="higher",
        unit="ratio",
        description="Share of the top k retrieved documents that are relevant (trec_eval P_k).",
        cutoff="required",
    )
)
