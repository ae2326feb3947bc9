"""HitRate@k (trec_eval `success_k`): did any relevant document make the top k?

    HitRate@k(q) = 1[ exists r <= k : grade(q, d_r) >= t ]

with t the relevance threshold (default 1). Aggregated as a proportion (Wilson CI).
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


def hit_rate_at_k(gains: NDArray[np.float64], k: int, threshold: int = 1) -> NDArray[np.float64]:
    """Per row of `gains` (queries x ranks, judged grades): 1.0 if a top-k grade >= threshold."""
    return np.asarray((gains[:, :k] >= threshold).any(axis=1), dtype=np.float64)


def compute(samples: Sequence[Sample], ctx: EvalContext, k: int | None) -> list[Outcome]:
    cutoff = require_k("hit_rate", k)

    def kernel(j: Judgments, threshold: int) -> NDArray[np.float64]:
        return hit_rate_at_k(j.gains, cutoff, threshold)

    return outcomes(samples, ctx, kernel, cutoff)


SPEC = register(
    MetricSpec(
        family="hit_rate",
        kind="per_sample",
        compute=compute,
        needs="ranked contexts + ground truth",
        direction="higher",
        unit="ratio",
        description="Share of questions with a relevant document in the top k (success_k).",
        cutoff="required",
        proportion=True,
    )
)
