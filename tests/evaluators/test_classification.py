"""Production judge pipeline metrics against scikit-learn; our judge's quality by hand."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score

from evaluators.classification import DECISION_SCORES
from evaluators.judge_quality import judge_consistency, judge_error_rate, judge_latency_ms_avg
from evaluators.outcome import Skipped
from evaluators.registry import DatasetValue, EvalContext
from evaluators.runner import evaluate
from evaluators.sample import JudgeDecision, Sample

NAMES = ["judge_accuracy", "judge_precision", "judge_recall", "judge_f1"]
SKLEARN = [accuracy_score, precision_score, recall_score, f1_score]


def _samples(pred: list[bool | None], label: list[bool | None]) -> list[Sample]:
    return [
        Sample(
            f"t{i}",
            "q",
            judge=JudgeDecision(decision=p, latency_ms=100.0 + i) if p is not None else None,
            judge_label=y,
        )
        for i, (p, y) in enumerate(zip(pred, label, strict=True))
    ]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_equal_to_sklearn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 200
    pred = (rng.random(n) < 0.6).tolist()
    label = (rng.random(n) < 0.5).tolist()
    agg = evaluate(_samples(pred, label), NAMES, EvalContext(seed=seed)).aggregates
    for name, fn in zip(NAMES, SKLEARN, strict=True):
        assert agg[name].value == pytest.approx(fn(label, pred), abs=1e-12)
        assert agg[name].n == n
        lo, value, hi = agg[name].ci_lower, agg[name].value, agg[name].ci_upper
        assert lo is not None and value is not None and hi is not None
        assert lo <= value <= hi


@pytest.mark.parametrize("seed", [0, 1])
def test_per_trace_scores_average_to_the_metric(seed: int) -> None:
    """Accuracy, precision and recall are means of per-trace scores (what live compare
    reads from the traces); F1 has none."""
    rng = np.random.default_rng(seed)
    pred = (rng.random(300) < 0.6).tolist()
    label = (rng.random(300) < 0.5).tolist()
    for name, fn in zip(NAMES[:3], SKLEARN[:3], strict=True):
        scores = [DECISION_SCORES[name](p, y) for p, y in zip(pred, label, strict=True)]
        counted = [s for s in scores if s is not None]
        assert np.mean(counted) == pytest.approx(fn(label, pred), abs=1e-12)
    assert "judge_f1" not in DECISION_SCORES


def test_samples_without_decision_or_label_are_left_out() -> None:
    pred = [True, False, None, True, True]
    label = [True, True, True, None, False]
    agg = evaluate(_samples(pred, label), NAMES, EvalContext()).aggregates
    assert agg["judge_accuracy"].value == pytest.approx(accuracy_score([1, 1, 0], [1, 0, 1]))
    assert agg["judge_accuracy"].n == 3
    assert dict(agg["judge_accuracy"].skip_reasons) == {"no judge.decision": 1, "no judge_label": 1}


def test_zero_denominators_are_skipped_with_a_reason() -> None:
    agg = evaluate(_samples([False, False], [False, False]), NAMES, EvalContext()).aggregates
    assert agg["judge_accuracy"].value == 1.0
    for name in ("judge_precision", "judge_recall", "judge_f1"):
        assert agg[name].value is None and agg[name].skipped == 2
        assert "undefined" in next(iter(agg[name].skip_reasons))


def test_judge_latency_is_a_plain_mean() -> None:
    agg = evaluate(
        _samples([True, None, False], [True, True, True]), ["judge_latency_ms"], EvalContext()
    ).aggregates["judge_latency_ms"]
    assert agg.value == pytest.approx(101.0) and agg.n == 2 and agg.skipped == 1


def test_judge_consistency_hand_values() -> None:
    keys = ["a", "a", "b", "b", "c", "c", "c", "d", "e", "e"]
    scores = [0.8, 0.3, 1.0, 0.2, 0.5, 0.6, 0.9, 0.7, 0.4, None]
    status = ["ok"] * 9 + ["error"]
    value = judge_consistency(keys, scores, status)
    # a: |0.8-0.3| = 0.5 <= 0.5 consistent; b: 0.8 apart no; c: range 0.4 yes;
    # d judged once; e's repeat failed -> only a, b, c count.
    assert isinstance(value, DatasetValue)
    assert value.value == pytest.approx(2 / 3) and value.n == 3
    assert dict(value.skip_reasons) == {"judged once": 2}
    tight = judge_consistency(keys, scores, status, delta=0.1)
    assert isinstance(tight, DatasetValue) and tight.value == 0.0
    assert isinstance(judge_consistency(["a"], [1.0], ["ok"]), Skipped)


def test_judge_error_rate_and_latency_hand_values() -> None:
    rate = judge_error_rate(["ok", "ok", "error", "timeout"])
    assert isinstance(rate, DatasetValue) and rate.value == 0.5 and rate.n == 4
    assert isinstance(judge_error_rate([]), Skipped)
    lat = judge_latency_ms_avg([100.0, None, 300.0])
    assert isinstance(lat, DatasetValue) and lat.value == 200.0 and lat.n == 2
    assert dict(lat.skip_reasons) == {"no latency": 1}
    assert isinstance(judge_latency_ms_avg([None]), Skipped)
