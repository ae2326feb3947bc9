"""When a sample has no spread: its values differ by no more than float64 rounding.

Differences such as 0.3 − 0.2 and 0.5 − 0.4 are one value in intent but not in their last
bits, and a standard deviation of 10⁻¹⁷ would turn into an effect size of 10¹⁶. So a sample
whose range is at most `NOISE` times the largest magnitude of the values it came from,

    max(x) − min(x) ≤ 10⁻¹⁰ · scale,

has no spread: its standard deviation is taken as 0 and the statistics that divide by it
(effect sizes, the MDE, Welch's t) are undefined or take their degenerate form. In the
same spirit a paired difference |b − a| ≤ 10⁻¹⁰ · max(|a|, |b|) is a tie (`differences`),
and two constant samples that differ by no more than that are equal.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

NOISE = 1e-10


def has_spread(x: NDArray[np.float64], scale: float) -> bool:
    """Whether the values of `x` differ by more than rounding noise of `scale`."""
    if x.size < 2:
        return False
    return float(x.max() - x.min()) > NOISE * scale


def differences(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    """b − a, with differences within rounding noise of the values set to exactly 0."""
    d = b - a
    noise = np.abs(d) <= NOISE * np.maximum(np.abs(a), np.abs(b))
    result: NDArray[np.float64] = np.where(noise, 0.0, d)
    return result
