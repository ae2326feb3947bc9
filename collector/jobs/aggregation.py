"""How each metric's window values are made: the `Signature` every aggregate carries.

Every window is aggregated from the job's bucket sums (`bucket_aggregation`: every trace
in the window counts, not a sample of them), and each aggregate carries the `Signature`
of how its number was made (embedding model and its thresholds, judge model), so values
made differently are never compared as if alike.
"""

from __future__ import annotations

from collector.jobs.definition import JobEnvironment
from collector.jobs.evaluation import eval_context
from evaluators.registry import ResolvedMetric
from evaluators.runner import signature_for
from evaluators.signature import Signature


def signature(metric: ResolvedMetric, env: JobEnvironment) -> Signature:
    """How `metric`'s values are made with the job's embedder, judge and options: the
    evaluators' own rule (`evaluators.runner.signature_for`), so a scheduled result and
    `ragpulse evaluate` stamp the same judge models, prompt hash and embedding model."""
    return signature_for(metric, eval_context(env))
