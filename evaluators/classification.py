"""Production judge pipeline (seed 004, §9): is the "show the answer" decision right?

Over samples that carry both `judge.decision` (prediction) and `judge_label` (truth),
positive = "show":
    accuracy  = (TP + TN) / (TP + TN + FP + FN)
    precision = TP / (TP + FP)
    recall    = TP / (TP + FN)
    F1        = 2 · precision · recall / (precision + recall) = 2TP / (2TP + FP + FN)
These equal scikit-learn's accuracy/precision/recall/f1_score; a zero denominator is
`Skipped` with the reason instead of sklearn's warning and 0. Intervals: Wilson for the
three proportions (over their denominators), a seeded bootstrap for F1.
`judge_latency_ms` is the mean of `judge.latency_ms` (lower is better).

Accuracy, precision and recall are shares of traces, so each has a per-trace form
(`DECISION_SCORES`): a trace's 1/0 "the decision was right", over the traces the metric
counts (precision: those the judge showed; recall: those labelled show). Their mean is the
metric, which lets two versions' traces be compared on it (`ragpulse compare --a/--b`)
although the jobs compute it over whole windows. F1 is no mean of anything per trace.
`judge_decision_correct` is accuracy's per-trace form as a metric of its own (1 when the
decision matches the label, 0 when not, `Skipped` without both): the per-trace outcome a
judge-agreement SLO (`kind: agreement`) classifies, every labelled trace an event.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from evaluators.aggregate import bootstrap_statistic, wilson_interval
from evaluators.outcome import Outcome, Score, Skipped
from evaluators.registry import DatasetFn, DatasetValue, EvalContext, MetricSpec, register
from evaluators.sample import Sample


@dataclass(frozen=True)
class Confusion:
    tp: int
    tn: int
    fp: int
    fn: int

    @property
    def total(self) -> int:
        return self.tp + self.tn + self.fp + self.fn


def confusion(predicted: np.ndarray, actual: np.ndarray) -> Confusion:
    """Counts of the binary confusion matrix (positive = True)."""
    p = np.asarray(predicted, dtype=bool)
    a = np.asarray(actual, dtype=bool)
    return Confusion(
        tp=int((p & a).sum()),
        tn=int((~p & ~a).sum()),
        fp=int((p & ~a).sum()),
        fn=int((~p & a).sum()),
    )


def _ratio(num: int, den: int, undefined: str) -> float | Skipped:
    return num / den if den else Skipped(undefined)


def accuracy(c: Confusion) -> float | Skipped:
    return _ratio(c.tp + c.tn, c.total, "no samples with judge.decision and judge_label")


def precision(c: Confusion) -> float | Skipped:
    return _ratio(c.tp, c.tp + c.fp, "precision undefined: the judge never decided to show")


def recall(c: Confusion) -> float | Skipped:
    return _ratio(c.tp, c.tp + c.fn, "recall undefined: no sample is labelled show")


def f1(c: Confusion) -> float | Skipped:
    return _ratio(2 * c.tp, 2 * c.tp + c.fp + c.fn, "F1 undefined: no true or predicted show")


def _accuracy_score(decision: bool, label: bool) -> float | None:
    return float(decision == label)


def _precision_score(decision: bool, label: bool) -> float | None:
    return float(label) if decision else None


def _recall_score(decision: bool, label: bool) -> float | None:
    return float(decision) if label else None


DECISION_SCORES: dict[str, Callable[[bool, bool], float | None]] = {
    "judge_accuracy": _accuracy_score,
    "judge_precision": _precision_score,
    "judge_recall": _recall_score,
}
"""metric -> a trace's score from (judge.decision, judge_label), None where the trace is
outside the metric's denominator; the mean of the scores is the metric."""


def _labelled(samples: Sequence[Sample]) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    pred: list[bool] = []
    act: list[bool] = []
    skipped: Counter[str] = Counter()
    for s in samples:
        if s.judge is None or s.judge.decision is None:
            skipped["no judge.decision"] += 1
        elif s.judge_label is None:
            skipped["no judge_label"] += 1
        else:
            pred.append(bool(s.judge.decision))
            act.append(bool(s.judge_label))
    return np.array(pred, dtype=bool), np.array(act, dtype=bool), dict(skipped)


def _proportion_metric(which: str) -> DatasetFn:
    def compute(
        samples: Sequence[Sample], ctx: EvalContext, k: int | None
    ) -> DatasetValue | Outcome:
        pred, act, skipped = _labelled(samples)
        c = confusion(pred, act)
        num, den, value = {
            "accuracy": (c.tp + c.tn, c.total, accuracy(c)),
            "precision": (c.tp, c.tp + c.fp, precision(c)),
            "recall": (c.tp, c.tp + c.fn, recall(c)),
        }[which]
        if isinstance(value, Skipped):
            return value
        lo, hi = wilson_interval(num, den)
        return DatasetValue(value, c.total, lo, hi, skipped)

    return compute


def _f1_metric(
    samples: Sequence[Sample], ctx: EvalContext, k: int | None
) -> DatasetValue | Outcome:
    pred, act, skipped = _labelled(samples)
    value = f1(confusion(pred, act))
    if isinstance(value, Skipped):
        return value
    tp_i = (pred & act).astype(np.float64)
    err_i = (pred ^ act).astype(np.float64)

    def stat(idx: np.ndarray) -> np.ndarray:
        tp = tp_i[idx].sum(axis=1)
        den = 2 * tp + err_i[idx].sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(den > 0, 2 * tp / np.where(den > 0, den, 1.0), np.inf)

    ci = bootstrap_statistic(len(pred), stat, ctx.seed)
    lo, hi = ci if ci is not None else (None, None)
    return DatasetValue(value, len(pred), lo, hi, skipped)


def judge_latency_ms(samples: Sequence[Sample], ctx: EvalContext, k: int | None) -> list[Outcome]:
    return [
        Score(float(s.judge.latency_ms))
        if s.judge is not None and s.judge.latency_ms is not None
        else Skipped("no judge.latency_ms")
        for s in samples
    ]


def judge_decision_correct(
    samples: Sequence[Sample], ctx: EvalContext, k: int | None
) -> list[Outcome]:
    """1.0 where `judge.decision == judge_label`, 0.0 where not; `Skipped` without both."""
    out: list[Outcome] = []
    for s in samples:
        if s.judge is None or s.judge.decision is None:
            out.append(Skipped("no judge.decision"))
        elif s.judge_label is None:
            out.append(Skipped("no judge_label"))
        else:
            out.append(Score(float(bool(s.judge.decision) == bool(s.judge_label))))
    return out


_NEEDS = "judge.decision + judge_label"
for _family, _fn, _desc in (
    (
        "judge_accuracy",
        _proportion_metric("accuracy"),
        "Share of production judge decisions (show / don't show) that match judge_label.",
    ),
    (
        "judge_precision",
        _proportion_metric("precision"),
        "Of the answers the production judge showed, the share that should have been shown.",
    ),
    (
        "judge_recall",
        _proportion_metric("recall"),
        "Of the answers that should have been shown, the share the production judge showed.",
    ),
    ("judge_f1", _f1_metric, "F1 of the production judge's show decision."),
):
    register(
        MetricSpec(
            family=_family,
            kind="dataset",
            compute=_fn,
            needs=_NEEDS,
            description=_desc,
            direction="higher",
            unit="ratio",
        )
    )
register(
    MetricSpec(
        family="judge_latency_ms",
        kind="per_sample",
        compute=judge_latency_ms,
        needs="judge.latency_ms",
        description="Mean latency of the production judge (ms).",
        direction="lower",
        unit="ms",
    )
)
register(
    MetricSpec(
        family="judge_decision_correct",
        kind="per_sample",
        compute=judge_decision_correct,
        needs=_NEEDS,
        description="Per trace, whether the production judge's decision matches judge_label "
        "(its mean is judge_accuracy).",
        proportion=True,
        direction="higher",
        unit="ratio",
        reads=frozenset({"judge", "judge_label"}),
    )
)
