"""A score against a threshold, `value op threshold`: the rule that makes a quality SLO's
event good (`faithfulness >= 0.7`, `hit_rate@5 == 1`, `latency_ms <= 2000`).

One definition for the SLO's events (`collector.settings.slo_spec.SloSpec.is_good`) and
for comparing its classification with human labels (`evaluators.threshold_agreement`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

OPS = (">=", ">", "<=", "<", "==")
"""The comparisons an SLO's rule may use."""
EQUAL_TOLERANCE = 1e-9
"""`==` compares within this absolute tolerance (scores are floats: hit_rate@5 == 1)."""


def is_good(value: float, op: str, threshold: float) -> bool:
    """Whether one value passes `value op threshold`."""
    if op == ">=":
        return value >= threshold
    if op == ">":
        return value > threshold
    if op == "<=":
        return value <= threshold
    if op == "<":
        return value < threshold
    if op == "==":
        return math.isclose(value, threshold, rel_tol=0.0, abs_tol=EQUAL_TOLERANCE)
    raise ValueError(f"unknown comparison {op!r}; known: {', '.join(OPS)}")


def good_mask(values: Sequence[float] | np.ndarray, op: str, threshold: float) -> np.ndarray:
    """`is_good` of every value, as booleans."""
    v = np.asarray(values, dtype=np.float64)
    if op == ">=":
        out = v >= threshold
    elif op == ">":
        out = v > threshold
    elif op == "<=":
        out = v <= threshold
    elif op == "<":
        out = v < threshold
    elif op == "==":
        out = np.abs(v - threshold) <= EQUAL_TOLERANCE
    else:
        raise ValueError(f"unknown comparison {op!r}; known: {', '.join(OPS)}")
    mask: np.ndarray = np.asarray(out, dtype=bool)
    return mask
