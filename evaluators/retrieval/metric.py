"""Shared machinery of the retrieval metric families: the relevance threshold and
cutoff they are asked for, and `outcomes`, which runs a family's numpy kernel over the
batch's shared `Judgments` and maps it back to one outcome per sample (a score, or the
reason the sample is skipped)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evaluators.outcome import Outcome, Score
from evaluators.registry import EvalContext
from evaluators.retrieval.judgments import NO_KEYED_CONTEXTS, NO_RELEVANT, Judgments, judge
from evaluators.sample import Sample

THRESHOLD_OPTION = "relevance_threshold"


def relevance_threshold(ctx: EvalContext) -> int:
    """The grade from which a document is relevant (`ctx.options["relevance_threshold"]`)."""
    value = ctx.options.get(THRESHOLD_OPTION, 1)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{THRESHOLD_OPTION} must be an integer >= 1, got {value!r}")
    return value


Kernel = Callable[[Judgments, int], NDArray[np.float64]]


def outcomes(
    samples: Sequence[Sample], ctx: EvalContext, kernel: Kernel, k: int | None
) -> list[Outcome]:
    """One outcome per sample: `kernel(judgments, threshold)[row]` or the skip reason.

    `k` is the deepest rank the kernel reads from `gains` (None: it reads none past
    what is built, e.g. the whole-list reciprocal rank)."""
    threshold = relevance_threshold(ctx)
    judgments = judge(samples, k)
    row_of = judgments.row_of
    scored = row_of >= 0
    if len(judgments.gains):
        scored[scored] = judgments.n_relevant(threshold)[row_of[scored]] > 0
        values: list[Any] = np.where(scored, kernel(judgments, threshold)[row_of], 0.0).tolist()
    else:
        values = [0.0] * len(samples)
    # Equal values share one (immutable) Score: hit rates and precisions repeat a lot.
    memo = {value: Score(value) for value in set(values)}
    result: list[Outcome] = list(map(memo.__getitem__, values))
    for j in np.flatnonzero(~scored).tolist():
        skip = judgments.skip_of[j]
        if skip is None or (skip is NO_KEYED_CONTEXTS and not _any_relevant(samples[j], threshold)):
            skip = NO_RELEVANT
        result[j] = skip
    return result


def _any_relevant(sample: Sample, threshold: int) -> bool:
    relevance = sample.relevance
    return relevance is not None and any(g >= threshold for g in relevance.values())


def require_k(family: str, k: int | None) -> int:
    """The cutoff of a family registered with `cutoff="required"`."""
    if k is None or k < 1:
        raise ValueError(f"{family} needs a positive cutoff, e.g. {family}@10")
    return k
