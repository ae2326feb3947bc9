"""Label scales cover every judge metric; labels compared with a judge's outcomes."""

from __future__ import annotations

import numpy as np
import pytest

from evaluators.agreement import Stat, Undefined
from evaluators.conversation_metrics import JUDGED_SESSION_METRICS
from evaluators.correction import Corrected
from evaluators.judge.metric import JudgeScore
from evaluators.labelled import compare_with_labels
from evaluators.labels import LABEL_SCALES, LabelScale, label_scale
from evaluators.outcome import Failed, Score, Skipped
from evaluators.registry import MetricSpec, declared


def test_every_judge_metric_has_a_label_scale_in_its_range() -> None:
    judge = {
        name: spec
        for name, spec in declared().items()
        if isinstance(spec, MetricSpec) and spec.uses_judge
    }
    # and the judged session metrics (a job's, labelled on a session's first turn)
    assert set(LABEL_SCALES) == set(judge) | set(JUDGED_SESSION_METRICS)
    for name, scale in LABEL_SCALES.items():
        bounds = (0.0, 1.0) if name in JUDGED_SESSION_METRICS else judge[name].value_range
        assert scale.metric_bounds == bounds


def test_scale_checks() -> None:
    grades = label_scale("context_relevance")
    assert grades.check(2.0) is None
    assert grades.check(1.5) == "not an integer grade"
    assert grades.check(3.0) == "outside 0..2"
    assert LabelScale("binary").check(0.5) == "not 0 or 1"
    assert label_scale("faithfulness").check(0.37) is None
    assert label_scale("faithfulness").check(float("nan")) == "outside 0..1"
    with pytest.raises(ValueError, match="known: context_relevance"):
        label_scale("mrr")
    assert list(grades.judge_on_label_scale(np.array([0.0, 0.3, 0.5, 1.0]))) == [0, 1, 1, 2]
    assert list(LabelScale("binary").judge_on_label_scale(np.array([0.2, 0.5]))) == [0, 1]


def test_compare_uses_scored_and_labelled_samples_only() -> None:
    outcomes = [
        JudgeScore(1.0, by_model={"a": 1.0}),
        Score(0.5),
        Skipped("no answer"),
        Failed("timeout"),
        Score(0.0),
        Score(1.0),
    ]
    labels = [
        {"e2e_score": 0.5},
        {"e2e_score": 0.5},
        {"e2e_score": 1.0},  # skipped by the judge: no pair
        {"e2e_score": 0.0},  # failed: no pair
        {},
        {"faithfulness": 1.0},  # another metric's label
    ]
    found = compare_with_labels("e2e_score", outcomes, labels)
    assert found is not None
    assert found.agreement.n == 2 and not found.by_model
    mae = found.agreement.stats["mae"]
    assert isinstance(mae, Stat) and mae.value == pytest.approx(0.25)
    assert isinstance(found.agreement.stats["spearman"], Undefined)  # human labels constant
    corrected = found.corrected
    assert isinstance(corrected, Corrected)
    # judge over the 4 scored: 0.625; rectifier over the 2 labelled: -0.25
    assert corrected.value == pytest.approx(0.375)
    assert (corrected.n_labelled, corrected.n_scored) == (2, 4)

    assert compare_with_labels("mrr", outcomes, labels) is None
    assert compare_with_labels("faithfulness", outcomes, [{}] * 6) is None
    one = compare_with_labels("e2e_score", outcomes[:1], labels[:1])
    assert one is not None and isinstance(one.corrected, Undefined)
    assert one.corrected_dict()["undefined"] == "fewer than 2 labelled traces"
    with pytest.raises(ValueError, match="parallel"):
        compare_with_labels("e2e_score", outcomes, labels[:2])
