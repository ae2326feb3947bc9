"""Minimum detectable effect: the smallest |diff| a two-sided test at level α finds with
probability `power`, under the normal approximation with the observed standard error:

    MDE = (z_{1−α/2} + z_power) · SE

(SE = sd(d)/sqrt(n) paired, sqrt(s²_a/n_a + s²_b/n_b) unpaired). With SE = 0 (no spread
observed) the formula would promise that any difference is detectable, which n questions
without observed noise cannot back: the MDE is then None.
"""

from __future__ import annotations

from scipy.special import ndtri


def mde(se: float, alpha: float, power: float) -> float | None:
    """(z_{1−α/2} + z_power) · SE, or None where SE is 0."""
    if not (0.0 < alpha < 1.0 and 0.0 < power < 1.0):
        raise ValueError(f"alpha and power must lie in (0, 1), got {alpha} and {power}")
    if se < 0.0:
        raise ValueError(f"a standard error cannot be negative, got {se}")
    if se == 0.0:
        return None
    return float((ndtri(1.0 - alpha / 2.0) + ndtri(power)) * se)
