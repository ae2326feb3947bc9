"""Adjusted p-values for the several metrics compared in one call.

With m p-values sorted ascending, p_(1) ≤ … ≤ p_(m):

- Holm's step-down (controls the family-wise error rate):
      p̃_(i) = max_{k ≤ i} min(1, (m − k + 1) · p_(k))
- Benjamini–Hochberg (controls the false discovery rate; independent or positively
  dependent tests):
      p̃_(i) = min_{k ≥ i} min(1, m / k · p_(k))
- none: p̃ = p.

Both are monotone in p and capped at 1. BH is scipy's own
(`scipy.stats.false_discovery_control(p, method='bh')`), not written again here. A metric
is significant when p̃ < alpha.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from scipy.stats import false_discovery_control


def holm(p: NDArray[np.float64]) -> NDArray[np.float64]:
    """Holm step-down adjusted p-values, in the input order."""
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.maximum.accumulate(scaled)
    return out


def benjamini_hochberg(p: NDArray[np.float64]) -> NDArray[np.float64]:
    """Benjamini–Hochberg adjusted p-values, in the input order (scipy's)."""
    return np.asarray(false_discovery_control(p, method="bh"), dtype=np.float64)


def _none(p: NDArray[np.float64]) -> NDArray[np.float64]:
    return p.copy()


CORRECTIONS: dict[str, Callable[[NDArray[np.float64]], NDArray[np.float64]]] = {
    "holm": holm,
    "bh": benjamini_hochberg,
    "none": _none,
}


def adjust(p: NDArray[np.float64], correction: str) -> NDArray[np.float64]:
    """Adjusted p-values by the named correction ("holm", "bh" or "none")."""
    if correction not in CORRECTIONS:
        raise ValueError(f"unknown correction {correction!r}; known: {', '.join(CORRECTIONS)}")
    p = np.asarray(p, dtype=np.float64)
    if p.ndim != 1 or np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError("p-values must be a 1-d array of numbers in [0, 1]")
    return CORRECTIONS[correction](p)
