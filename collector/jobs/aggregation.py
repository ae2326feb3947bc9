"""Per-window and per-group aggregates of a job's per-sample outcomes.

Every window is aggregated from the job's `OutcomeColumns` (every trace in the window
counts, not a sample of them), and each aggregate carries the `Signature` of how its
number was made (embedding model and its thresholds, judge model), so values made
differently are never compared as if alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from collector.jobs.definition import JobEnvironment
from collector.jobs.evaluation import eval_context
from collector.jobs.outcomes import LabelFold, OutcomeColumns, WindowAggregate
from collector.jobs.sync import epoch
from collector.jobs.windows import Window
from evaluators.registry import ResolvedMetric
from evaluators.runner import signature_for
from evaluators.signature import Signature


def signature(metric: ResolvedMetric, env: JobEnvironment) -> Signature:
    """How `metric`'s values are made with the job's embedder, judge and options: the
    evaluators' own rule (`evaluators.runner.signature_for`), so a scheduled result and
    `ragpulse evaluate` stamp the same judge models, prompt hash and embedding model."""
    return signature_for(metric, eval_context(env))


def window_aggregates(
    columns: OutcomeColumns,
    metrics: Sequence[ResolvedMetric],
    env: JobEnvironment,
    now: datetime,
    folds: Mapping[str, LabelFold] | None = None,
) -> list[tuple[Window, WindowAggregate]]:
    """Every metric's aggregate per window and group, the windows ending at `now`; with
    `folds` (`OutcomeColumns.folds`), a label's folded values make one group `other`."""
    end = epoch(now)
    proportions = {m.name: m.spec.proportion for m in metrics}
    signatures = {m.name: signature(m, env) for m in metrics}
    points: list[tuple[Window, WindowAggregate]] = []
    for window in env.windows:
        for item in columns.aggregate(
            end - window.seconds, end, proportions, signatures, folds=folds
        ):
            points.append((window, item))
    return points
