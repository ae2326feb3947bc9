"""The SLO rule's classification against human labels: κ, sensitivity and specificity
(positive = bad) pinned to scikit-learn, with bootstrap intervals, never NaN."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, recall_score

from evaluators.agreement import Stat, Undefined
from evaluators.rule import good_mask, is_good
from evaluators.threshold_agreement import threshold_agreement

GOLDEN = [
    # (judge values, human labels, op, threshold, κ, sensitivity, specificity), the
    # values scikit-learn 1.9.1 gives for cohen_kappa_score(h_bad, j_bad),
    # recall_score(h_bad, j_bad) and recall_score(h_bad, j_bad, pos_label=0)
    (
        [0.95, 0.8, 0.72, 0.69, 0.4, 0.9, 0.3, 0.75, 0.1, 0.85, 0.65, 0.7],
        [1, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1],
        ">=",
        0.7,
        0.6571428571428571,
        0.8,
        0.8571428571428571,
    ),
    (  # lower is better (noise sensitivity): a label of 1 is the bad side
        [0.0, 0.1, 0.25, 0.5, 0.15, 0.3, 0.05, 0.2, 0.9, 0.4],
        [0, 0, 1, 1, 1, 0, 0, 0, 1, 1],
        "<=",
        0.2,
        0.6,
        0.8,
        0.8,
    ),
    (
        [0.6, 0.55, 0.5, 0.2, 0.9, 0.45, 0.8, 0.3],
        [1, 0, 0, 0, 1, 1, 1, 0],
        ">",
        0.5,
        0.5,
        0.75,
        0.75,
    ),
]


@pytest.mark.parametrize(("j", "h", "op", "t", "kappa", "sens", "spec"), GOLDEN)
def test_golden_values(
    j: list[float], h: list[float], op: str, t: float, kappa: float, sens: float, spec: float
) -> None:
    found = threshold_agreement(j, h, op, t)
    stats = found.agreement.stats
    assert found.agreement.scale == "threshold" and found.agreement.n == len(j)
    for name, want in (("cohen_kappa", kappa), ("sensitivity", sens), ("specificity", spec)):
        stat = stats[name]
        assert isinstance(stat, Stat)
        assert stat.value == pytest.approx(want, abs=1e-12)
        assert stat.ci_lower is not None and stat.ci_upper is not None
        assert stat.ci_lower <= stat.value <= stat.ci_upper
    bad_h = ~good_mask(h, op, t)
    assert found.bad_share_human == pytest.approx(bad_h.mean())
    sensitivity = stats["sensitivity"]
    assert isinstance(sensitivity, Stat) and sensitivity.n == int(bad_h.sum())


@pytest.mark.parametrize("seed", range(5))
def test_equals_sklearn_on_random_data(seed: int) -> None:
    rng = np.random.default_rng(seed)
    truth = rng.random(200)
    judge = np.clip(truth + rng.normal(0, 0.2, 200), 0, 1)
    human = (truth >= 0.6).astype(np.float64)  # binary verdicts on a continuous metric
    found = threshold_agreement(judge, human, ">=", 0.6, n_resamples=200)
    b = (judge < 0.6).astype(int)
    hb = (human < 0.6).astype(int)
    stats = found.agreement.stats
    for name, want in (
        ("cohen_kappa", cohen_kappa_score(hb, b)),
        ("sensitivity", recall_score(hb, b)),
        ("specificity", recall_score(hb, b, pos_label=0)),
    ):
        stat = stats[name]
        assert isinstance(stat, Stat) and stat.value == pytest.approx(want, abs=1e-12)
    assert found.bad_share_sli == pytest.approx(b.mean())


def test_undefined_not_nan() -> None:
    # every human label passes the rule: no human-bad trace, sensitivity does not exist
    found = threshold_agreement([0.9, 0.2, 0.8], [1, 1, 1], ">=", 0.7)
    assert found.agreement.stats["sensitivity"] == Undefined("no human positives")
    assert isinstance(found.agreement.stats["specificity"], Stat)
    empty = threshold_agreement([], [], ">=", 0.7)
    assert empty.bad_share_sli is None and empty.agreement.n == 0
    assert all(isinstance(s, Undefined) for s in empty.agreement.stats.values())
    with pytest.raises(ValueError, match="one length"):
        threshold_agreement([0.1], [0.1, 0.2], ">=", 0.7)
    with pytest.raises(ValueError, match="finite"):
        threshold_agreement([float("nan")], [1.0], ">=", 0.7)


def test_the_rule() -> None:
    values = [0.69, 0.7, 1.0, 1.0 - 1e-12]
    assert good_mask(values, ">=", 0.7).tolist() == [False, True, True, True]
    assert good_mask(values, "==", 1.0).tolist() == [False, False, True, True]
    assert [is_good(v, "<", 0.7) for v in values] == [True, False, False, False]
    with pytest.raises(ValueError, match="unknown comparison '=>'"):
        is_good(0.5, "=>", 0.7)
    with pytest.raises(ValueError, match="unknown comparison"):
        good_mask(values, "!=", 0.7)
