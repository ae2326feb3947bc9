"""retrieval_empty_rate: the share of traces whose retrieval returned no context at all.

    empty(q) = 1[ |contexts(q)| = 0 ]          (aggregated as a proportion, Wilson CI)

An operations signal beside Tier 1: a question with ground truth and an empty retrieval
counts as a miss in every retrieval metric (trec_eval -c), so an outage lowers hit rate,
MRR and NDCG; this metric says how much of that comes from retrieval returning nothing.
Its population is every sample given (the scheduled `retrieval_health` job gives every
trace of the window, with or without ground truth); it is never skipped.
"""

from __future__ import annotations

from collections.abc import Sequence

from evaluators.outcome import Outcome, Score
from evaluators.registry import EvalContext, MetricSpec, register
from evaluators.sample import Sample

_EMPTY = Score(1.0)
_RETRIEVED = Score(0.0)


def retrieval_empty(
    samples: Sequence[Sample], ctx: EvalContext, k: int | None = None
) -> list[Outcome]:
    """1.0 for a sample without retrieved contexts, else 0.0."""
    return [_RETRIEVED if s.contexts else _EMPTY for s in samples]


SPEC = register(
    MetricSpec(
        family="retrieval_empty_rate",
        kind="per_sample",
        compute=retrieval_empty,
        needs="contexts (an empty or missing list counts)",
        description="Share of traces whose retrieval returned no context (an outage signal).",
        proportion=True,
        direction="lower",
        unit="ratio",
        reads=frozenset({"contexts"}),
    )
)
