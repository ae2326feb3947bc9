"""How well an LLM judge agrees with human labels on the same traces (issue #19, part 2).

Inputs are two parallel arrays over the labelled traces: the judge's value j_i and the
human's value h_i, on the metric's scale. The statistics chosen by the scale:

- binary (0/1), positive = 1, the human is the truth:
      cohen_kappa  κ = (p_o − p_e) / (1 − p_e),  p_o = Σ_k O_kk,  p_e = Σ_k O_k· O_·k
      sensitivity  = TP / (TP + FN)   (n = human positives)
      specificity  = TN / (TN + FP)   (n = human negatives)
- ordinal (integer grades, e.g. context relevance 0–2):
      weighted_kappa  κ_w = 1 − Σ_ij w_ij O_ij / Σ_ij w_ij E_ij,  E_ij = O_i· O_·j
      with w_ij = (i − j)² (quadratic, the default) or |i − j| (linear), i, j the indices
      of the sorted categories seen in either array; and mae.
- continuous (shares in [0, 1]):
      mae       = (1/n) Σ |j_i − h_i|
      spearman  ρ = Pearson correlation of the (average-tie) ranks of j and h

O is the joint distribution of (judge, human) as shares. These equal scikit-learn's
`cohen_kappa_score` (weights None/"linear"/"quadratic"), `recall_score` and
`scipy.stats.spearmanr`. Every statistic has a seeded percentile bootstrap 95% interval
over the labelled pairs (resamples where the statistic is undefined are left out) and its
n. A statistic that does not exist on the data (one class only, no positives, a constant
array, fewer than two pairs) is `Undefined` with the reason — never NaN.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
from scipy.stats import rankdata

from evaluators.aggregate import bootstrap_statistic

Rows = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
"""A statistic over paired rows: (R, n) judge and (R, n) human -> (R values, R booleans:
whether each row's statistic is defined; an undefined row's value is 0 and meaningless)."""

MIN_PAIRS = 2


@dataclass(frozen=True, slots=True)
class Undefined:
    """A statistic that does not exist on these data, and why."""

    reason: str


@dataclass(frozen=True)
class Stat:
    """One agreement statistic: its value, 95% bootstrap interval and n."""

    value: float
    n: int
    ci_lower: float | None = None
    ci_upper: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "ci_lower": self.ci_lower,
            "ci_upper": self.ci_upper,
            "n": self.n,
        }


@dataclass(frozen=True)
class Agreement:
    """The statistics of one scale for one judge against the human labels."""

    scale: str
    n: int
    stats: Mapping[str, Stat | Undefined] = field(default_factory=lambda: MappingProxyType({}))

    def to_dict(self) -> dict[str, Any]:
        """{stat: {value, ci_lower, ci_upper, n}} or {stat: {value: None, undefined: why}}."""
        out: dict[str, Any] = {}
        for name, stat in self.stats.items():
            if isinstance(stat, Stat):
                out[name] = stat.to_dict()
            else:
                out[name] = {"value": None, "n": self.n, "undefined": stat.reason}
        return out


def _pair(
    judge: Sequence[float] | np.ndarray, human: Sequence[float] | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    j = np.asarray(judge, dtype=np.float64)
    h = np.asarray(human, dtype=np.float64)
    if j.ndim != 1 or j.shape != h.shape:
        raise ValueError(f"judge and human must be 1-d of one length, got {j.shape} and {h.shape}")
    if not (np.all(np.isfinite(j)) and np.all(np.isfinite(h))):
        raise ValueError("judge and human values must be finite numbers")
    return j, h


# --- row kernels (vectorised over bootstrap resamples) ------------------------------------


def _kappa_weights(k: int, weights: str | None) -> np.ndarray:
    idx = np.arange(k, dtype=np.float64)
    diff = idx[:, None] - idx[None, :]
    known: dict[str | None, Callable[[np.ndarray], np.ndarray]] = {
        None: lambda d: (d != 0).astype(np.float64),
        "linear": np.abs,
        "quadratic": np.square,
    }
    if weights not in known:
        raise ValueError(f"unknown kappa weights {weights!r}; known: None, 'linear', 'quadratic'")
    return known[weights](diff)


def _kappa_rows(weights: np.ndarray) -> Rows:
    """κ_w per row of category codes (0..K−1); undefined where Σ w E = 0 (one category)."""
    k = weights.shape[0]

    def rows(j: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r, n = j.shape
        cell = (np.arange(r)[:, None] * (k * k) + j * k + h).ravel()
        observed = np.bincount(cell, minlength=r * k * k).reshape(r, k, k) / n
        expected = observed.sum(axis=2)[:, :, None] * observed.sum(axis=1)[:, None, :]
        num = (weights * observed).sum(axis=(1, 2))
        den = (weights * expected).sum(axis=(1, 2))
        ok = den > 0
        out = np.zeros(r)
        out[ok] = 1.0 - num[ok] / den[ok]
        return out, ok

    return rows


def _rate_rows(judge_value: bool, human_value: bool) -> Rows:
    """Share of pairs with judge = `judge_value` among those with human = `human_value`."""

    def rows(j: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        given = (h == 1) == human_value
        hits = (given & ((j == 1) == judge_value)).sum(axis=1)
        total = given.sum(axis=1)
        ok = total > 0
        out = np.zeros(j.shape[0])
        out[ok] = hits[ok] / total[ok]
        return out, ok

    return rows


def _mae_rows(j: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    result: np.ndarray = np.abs(j - h).mean(axis=1)
    return result, np.ones(result.shape[0], dtype=bool)


def _spearman_rows(j: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pearson correlation of the average ranks per row; undefined where a row is constant."""
    rj = rankdata(j, axis=1)
    rh = rankdata(h, axis=1)
    rj -= rj.mean(axis=1, keepdims=True)
    rh -= rh.mean(axis=1, keepdims=True)
    den = np.sqrt((rj * rj).sum(axis=1) * (rh * rh).sum(axis=1))
    ok = den > 0
    out = np.zeros(j.shape[0])
    out[ok] = (rj * rh).sum(axis=1)[ok] / den[ok]
    clipped: np.ndarray = np.clip(out, -1.0, 1.0)
    return clipped, ok


# --- point values ------------------------------------------------------------------------


def _point(rows: Rows, j: np.ndarray, h: np.ndarray, undefined: str) -> float | Undefined:
    if j.size < 1:
        return Undefined("no labelled pairs")
    values, defined = rows(j[None, :], h[None, :])
    return float(values[0]) if bool(defined[0]) else Undefined(undefined)


def _codes(j: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    categories, inverse = np.unique(np.concatenate([j, h]), return_inverse=True)
    return inverse[: j.size], inverse[j.size :], int(categories.size)


def cohen_kappa(
    judge: Sequence[float] | np.ndarray,
    human: Sequence[float] | np.ndarray,
    weights: str | None = None,
) -> float | Undefined:
    """Cohen's κ (weights None) or weighted κ ("linear", "quadratic"), as scikit-learn's."""
    j, h = _pair(judge, human)
    cj, ch, k = _codes(j, h)
    return _point(
        _kappa_rows(_kappa_weights(k, weights)), cj, ch, "judge and human use one category only"
    )


def weighted_kappa(
    judge: Sequence[float] | np.ndarray,
    human: Sequence[float] | np.ndarray,
    weights: str = "quadratic",
) -> float | Undefined:
    """Weighted κ for ordinal grades: linear or quadratic disagreement weights."""
    if weights not in ("linear", "quadratic"):
        raise ValueError(f"unknown weighted kappa weights {weights!r}; known: linear, quadratic")
    return cohen_kappa(judge, human, weights)


def sensitivity(
    judge: Sequence[float] | np.ndarray, human: Sequence[float] | np.ndarray
) -> float | Undefined:
    """TP / (TP + FN): the judge's 1s among the human's 1s (recall)."""
    j, h = _pair(judge, human)
    return _point(_rate_rows(True, True), j, h, "no human positives")


def specificity(
    judge: Sequence[float] | np.ndarray, human: Sequence[float] | np.ndarray
) -> float | Undefined:
    """TN / (TN + FP): the judge's 0s among the human's 0s."""
    j, h = _pair(judge, human)
    return _point(_rate_rows(False, False), j, h, "no human negatives")


def mae(
    judge: Sequence[float] | np.ndarray, human: Sequence[float] | np.ndarray
) -> float | Undefined:
    """Mean absolute difference between judge and human values."""
    j, h = _pair(judge, human)
    return _point(_mae_rows, j, h, "no labelled pairs")


def spearman(
    judge: Sequence[float] | np.ndarray, human: Sequence[float] | np.ndarray
) -> float | Undefined:
    """Spearman's ρ (average ranks for ties), as scipy.stats.spearmanr."""
    j, h = _pair(judge, human)
    if j.size < MIN_PAIRS:
        return Undefined(f"fewer than {MIN_PAIRS} labelled pairs")
    return _point(_spearman_rows, j, h, "judge or human values are constant")


def bootstrap_pairs(
    rows: Rows,
    judge: np.ndarray,
    human: np.ndarray,
    seed: int,
    n_resamples: int = 1000,
) -> tuple[float, float] | None:
    """Seeded percentile bootstrap 95% interval of a paired statistic, resampling pairs
    (the evaluators' `bootstrap_statistic`, all resamples of a chunk at once)."""

    def defined_only(idx: np.ndarray) -> np.ndarray:
        values, defined = rows(judge[idx], human[idx])
        kept: np.ndarray = values[defined]  # resamples where it is undefined are left out
        return kept

    return bootstrap_statistic(judge.size, defined_only, seed, n_resamples)


# --- by scale ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _StatDef:
    rows: Rows
    undefined: str
    counted: Callable[[np.ndarray], int]  # n of this statistic from the human values


def _all(h: np.ndarray) -> int:
    return int(h.size)


def _binary(j: np.ndarray, h: np.ndarray) -> dict[str, _StatDef]:
    for name, values in (("judge", j), ("human", h)):
        if not np.all((values == 0) | (values == 1)):
            raise ValueError(f"binary agreement needs 0/1 values; {name} has others")
    return {
        "cohen_kappa": _StatDef(
            _value_kappa_rows(np.array([0.0, 1.0]), None),
            "judge and human use one class only",
            _all,
        ),
        "sensitivity": _StatDef(
            _rate_rows(True, True), "no human positives", lambda x: int((x == 1).sum())
        ),
        "specificity": _StatDef(
            _rate_rows(False, False), "no human negatives", lambda x: int((x == 0).sum())
        ),
    }


def _ordinal(j: np.ndarray, h: np.ndarray) -> dict[str, _StatDef]:
    if not (np.all(j == np.round(j)) and np.all(h == np.round(h))):
        raise ValueError("ordinal agreement needs integer grades")
    return {
        "weighted_kappa": _StatDef(
            _value_kappa_rows(np.unique(np.concatenate([j, h])), "quadratic"),
            "judge and human use one grade only",
            _all,
        ),
        "mae": _StatDef(_mae_rows, "no labelled pairs", _all),
    }


def _value_kappa_rows(categories: np.ndarray, weights: str | None) -> Rows:
    """κ over values drawn from the sorted `categories` (the full sample's, so that every
    bootstrap resample weighs disagreements alike), mapped to codes row by row."""
    kappa = _kappa_rows(_kappa_weights(categories.size, weights))

    def rows(jr: np.ndarray, hr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return kappa(np.searchsorted(categories, jr), np.searchsorted(categories, hr))

    return rows


def _continuous(j: np.ndarray, h: np.ndarray) -> dict[str, _StatDef]:
    return {
        "mae": _StatDef(_mae_rows, "no labelled pairs", _all),
        "spearman": _StatDef(_spearman_rows, "judge or human values are constant", _all),
    }


SCALES: dict[str, Callable[[np.ndarray, np.ndarray], dict[str, _StatDef]]] = {
    "binary": _binary,
    "ordinal": _ordinal,
    "continuous": _continuous,
}


def agreement(
    judge: Sequence[float] | np.ndarray,
    human: Sequence[float] | np.ndarray,
    scale: str,
    *,
    seed: int = 0,
    n_resamples: int = 1000,
) -> Agreement:
    """The statistics of `scale` ("binary", "ordinal", "continuous") with bootstrap CIs."""
    if scale not in SCALES:
        raise ValueError(f"unknown agreement scale {scale!r}; known: {', '.join(SCALES)}")
    j, h = _pair(judge, human)
    defs = SCALES[scale](j, h)
    if j.size < MIN_PAIRS:
        why = Undefined(f"fewer than {MIN_PAIRS} labelled pairs")
        return Agreement(scale, int(j.size), MappingProxyType(dict.fromkeys(defs, why)))
    stats: dict[str, Stat | Undefined] = {}
    for name, d in defs.items():
        value = _point(d.rows, j, h, d.undefined)
        if isinstance(value, Undefined):
            stats[name] = value
            continue
        ci = bootstrap_pairs(d.rows, j, h, seed, n_resamples)
        lo, hi = ci if ci is not None else (None, None)
        stats[name] = Stat(value, d.counted(h), lo, hi)
    return Agreement(scale, int(j.size), MappingProxyType(stats))
