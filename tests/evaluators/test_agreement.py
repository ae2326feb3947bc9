"""Judge–human agreement against scikit-learn and scipy; undefined cases are typed."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score, recall_score

from evaluators.agreement import (
    Agreement,
    Stat,
    Undefined,
    agreement,
    cohen_kappa,
    mae,
    sensitivity,
    spearman,
    specificity,
    weighted_kappa,
)

SEEDS = range(20)


def _graded(seed: int, n: int, grades: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    human = rng.integers(0, grades, size=n)
    noise = rng.integers(-1, 2, size=n) * (rng.random(n) < 0.4)
    judge = np.clip(human + noise, 0, grades - 1)
    return judge.astype(float), human.astype(float)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
@pytest.mark.parametrize("grades", [2, 3, 5])
def test_kappa_equals_sklearn(seed: int, weights: str | None, grades: int) -> None:
    judge, human = _graded(seed, 37 + seed, grades)
    ours = cohen_kappa(judge, human, weights)
    assert isinstance(ours, float)
    assert ours == pytest.approx(cohen_kappa_score(judge, human, weights=weights), abs=1e-12)


@pytest.mark.parametrize("weights", ["linear", "quadratic"])
def test_weighted_kappa_is_kappa_with_weights(weights: str) -> None:
    judge, human = _graded(3, 50, 3)
    assert weighted_kappa(judge, human, weights) == pytest.approx(
        cohen_kappa_score(judge, human, weights=weights), abs=1e-12
    )
    with pytest.raises(ValueError, match="linear, quadratic"):
        weighted_kappa(judge, human, "cubic")
    with pytest.raises(ValueError, match="'linear', 'quadratic'"):
        cohen_kappa(judge, human, "cubic")


def test_kappa_on_a_textbook_table() -> None:
    # 2x2 table a=20 (both yes), b=5, c=10, d=15 (Wikipedia "Cohen's kappa" example):
    # p_o = 0.7, p_e = 0.5 -> kappa = 0.4
    judge = np.array([1] * 20 + [1] * 5 + [0] * 10 + [0] * 15)
    human = np.array([1] * 20 + [0] * 5 + [1] * 10 + [0] * 15)
    assert cohen_kappa(judge, human) == pytest.approx(0.4)


@pytest.mark.parametrize("seed", SEEDS)
def test_sensitivity_specificity_equal_sklearn_recall(seed: int) -> None:
    rng = np.random.default_rng(seed)
    human = rng.integers(0, 2, size=40)
    judge = np.where(rng.random(40) < 0.8, human, 1 - human)
    assert sensitivity(judge, human) == pytest.approx(recall_score(human, judge, pos_label=1))
    assert specificity(judge, human) == pytest.approx(recall_score(human, judge, pos_label=0))


@pytest.mark.parametrize("seed", SEEDS)
def test_spearman_and_mae(seed: int) -> None:
    rng = np.random.default_rng(seed)
    human = rng.random(30)
    judge = np.round(np.clip(human + rng.normal(0, 0.2, 30), 0, 1), 1)  # ties
    rho = spearman(judge, human)
    assert isinstance(rho, float)
    assert rho == pytest.approx(spearmanr(judge, human).statistic, abs=1e-12)
    assert mae(judge, human) == pytest.approx(float(np.mean(np.abs(judge - human))))


def test_undefined_is_typed_never_nan() -> None:
    ones = np.ones(10)
    assert isinstance(cohen_kappa(ones, ones), Undefined)
    assert isinstance(sensitivity(ones, np.zeros(10)), Undefined)
    assert isinstance(specificity(np.zeros(10), ones), Undefined)
    assert isinstance(spearman(ones, np.linspace(0, 1, 10)), Undefined)
    assert isinstance(spearman([0.3], [0.4]), Undefined)
    assert isinstance(mae([], []), Undefined)

    result = agreement(ones, ones, "binary")
    assert result.n == 10
    assert isinstance(result.stats["cohen_kappa"], Undefined)
    assert isinstance(result.stats["specificity"], Undefined)
    assert result.stats["sensitivity"] == Stat(1.0, 10, 1.0, 1.0)
    assert result.to_dict()["cohen_kappa"] == {
        "value": None,
        "n": 10,
        "undefined": "judge and human use one class only",
    }

    tiny = agreement([1.0], [1.0], "continuous")
    assert tiny.n == 1
    assert all(isinstance(s, Undefined) for s in tiny.stats.values())
    assert set(tiny.stats) == {"mae", "spearman"}


def test_agreement_by_scale_with_intervals() -> None:
    rng = np.random.default_rng(7)
    human = rng.integers(0, 2, size=200).astype(float)
    judge = np.where(rng.random(200) < 0.85, human, 1 - human)
    result = agreement(judge, human, "binary", seed=1)
    assert isinstance(result, Agreement)
    assert set(result.stats) == {"cohen_kappa", "sensitivity", "specificity"}
    kappa = result.stats["cohen_kappa"]
    assert isinstance(kappa, Stat)
    assert kappa.value == pytest.approx(cohen_kappa_score(judge, human))
    assert kappa.n == 200
    assert kappa.ci_lower is not None and kappa.ci_upper is not None
    assert kappa.ci_lower < kappa.value < kappa.ci_upper
    assert kappa.ci_upper - kappa.ci_lower < 0.3
    sens = result.stats["sensitivity"]
    assert isinstance(sens, Stat)
    assert sens.n == int(human.sum())
    # The same seed gives the same intervals; another seed another one.
    assert agreement(judge, human, "binary", seed=1) == result
    assert agreement(judge, human, "binary", seed=2) != result

    judge_o, human_o = _graded(5, 120, 3)
    ordinal = agreement(judge_o, human_o, "ordinal")
    wk = ordinal.stats["weighted_kappa"]
    assert isinstance(wk, Stat)
    assert wk.value == pytest.approx(cohen_kappa_score(judge_o, human_o, weights="quadratic"))
    assert set(ordinal.stats) == {"weighted_kappa", "mae"}

    cont = agreement(np.linspace(0, 1, 50), np.linspace(0, 1, 50) ** 2, "continuous")
    rho = cont.stats["spearman"]
    assert isinstance(rho, Stat)
    assert rho.value == pytest.approx(1.0)
    assert rho.ci_lower == pytest.approx(1.0) and rho.ci_upper == pytest.approx(1.0)


def test_bootstrap_interval_matches_a_loop_over_resamples() -> None:
    """The vectorised kernel gives, per resample, what scikit-learn gives on that resample."""
    rng = np.random.default_rng(11)
    human = rng.integers(0, 3, size=60).astype(float)
    judge = np.clip(human + rng.integers(-1, 2, size=60), 0, 2)
    result = agreement(judge, human, "ordinal", seed=3, n_resamples=200)
    idx = np.random.default_rng(3).integers(0, 60, size=(200, 60))
    by_hand = [
        cohen_kappa_score(judge[i], human[i], labels=[0, 1, 2], weights="quadratic") for i in idx
    ]
    lo, hi = np.percentile(by_hand, [2.5, 97.5])
    wk = result.stats["weighted_kappa"]
    assert isinstance(wk, Stat)
    assert wk.ci_lower == pytest.approx(lo) and wk.ci_upper == pytest.approx(hi)


def test_bad_input_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="known: binary, ordinal, continuous"):
        agreement([1.0, 0.0], [1.0, 0.0], "nominal")
    with pytest.raises(ValueError, match="0/1"):
        agreement([2.0, 0.0], [1.0, 0.0], "binary")
    with pytest.raises(ValueError, match="integer"):
        agreement([0.5, 0.0], [1.0, 0.0], "ordinal")
    with pytest.raises(ValueError, match="one length"):
        mae([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="finite"):
        mae([np.nan], [1.0])
