"""The answer's end-to-end latency as a per-trace metric: `latency_ms`.

    latency_ms_i = the trace's `latency_ms` (the total, or the sum of its stages)

A trace that reported no latency is `Skipped`. Aggregated as the mean with a 95% interval,
like every per-sample metric, and read by quantile too (`quantiles=True`): each window
also reports `latency_ms_p50`, `latency_ms_p95` and `latency_ms_p99`, from DDSketch bins
within 1% of the exact quantiles (`evaluators.quantiles`). Its per-trace outcomes are
also what a latency SLO (`kind: latency`, "the trace's latency <= 2 s") classifies, over
every trace (the UX job's population: not sampled).
"""

from __future__ import annotations

from collections.abc import Sequence

from evaluators.outcome import Outcome, Score, Skipped
from evaluators.registry import EvalContext, MetricSpec, register
from evaluators.sample import Sample

NO_LATENCY = "no latency_ms"


def latency_ms(samples: Sequence[Sample], ctx: EvalContext, k: int | None) -> list[Outcome]:
    """Each trace's own latency (ms), `Skipped` where it reported none."""
    return [
        Score(float(s.latency_ms)) if s.latency_ms is not None else Skipped(NO_LATENCY)
        for s in samples
    ]


register(
    MetricSpec(
        family="latency_ms",
        kind="per_sample",
        compute=latency_ms,
        needs="latency_ms",
        description="End-to-end latency of the answer (ms), every trace.",
        direction="lower",
        unit="ms",
        reads=frozenset({"latency_ms"}),
        quantiles=True,
    )
)
