"""What `ragpulse compare` reports: one comparison per metric, the skipped metrics and why,
and the settings that made the numbers (so a reported p-value can be reproduced).

A comparison is of a candidate B against a baseline A: `diff` = mean_b − mean_a, so a
positive diff means B scored higher (whether that is better depends on the metric's
direction, which the caller knows). Undefined statistics are None, never NaN.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class MetricComparison:
    """A against B on one metric: the difference, its interval, effect size and test."""

    metric: str
    paired: bool
    n: int
    """Pairs when paired; n_a + n_b when unpaired."""
    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    diff: float
    """mean_b − mean_a."""
    ci_lower: float
    """Percentile bootstrap interval of `diff` at the comparison's confidence."""
    ci_upper: float
    effect_size: float | None
    """None where undefined (no spread)."""
    effect_size_kind: str
    """"cohens_dz" (paired), "hedges_g" (unpaired continuous), "cohens_h" (unpaired 0/1)."""
    p_value: float
    p_adjusted: float
    """After the correction across the metrics compared in the same call."""
    significant: bool
    """p_adjusted < alpha."""
    test: str
    mde: float | None
    """Minimum detectable |diff| at alpha (two-sided) with the comparison's power:
    (z_{1−α/2} + z_power) · SE; None where SE is 0 (no spread observed)."""
    wins: int | None = None
    """Paired only: questions where b − a > tie_tolerance."""
    ties: int | None = None
    losses: int | None = None
    binary: bool = False
    """Whether the metric was treated as a 0/1 share."""

    def to_dict(self) -> dict[str, Any]:
        """Every field, JSON-ready (Python numbers, None for undefined)."""
        return asdict(self)


@dataclass(frozen=True)
class Incomparable:
    """A metric that could not be compared, and why."""

    metric: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "reason": self.reason}


@dataclass(frozen=True)
class Comparison:
    """All metrics compared in one call, with the settings they share."""

    metrics: tuple[MetricComparison, ...]
    skipped: tuple[Incomparable, ...]
    correction: str
    """"holm" (step-down, family-wise error) or "bh" (Benjamini–Hochberg, false discovery
    rate), or "none"."""
    alpha: float
    confidence: float
    resamples: int
    seed: int
    power: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "correction": self.correction,
            "alpha": self.alpha,
            "confidence": self.confidence,
            "resamples": self.resamples,
            "seed": self.seed,
            "power": self.power,
            "metrics": [m.to_dict() for m in self.metrics],
            "skipped": [s.to_dict() for s in self.skipped],
        }

    def get(self, metric: str) -> MetricComparison | None:
        """The comparison of `metric`, or None if it was skipped or not asked for."""
        for m in self.metrics:
            if m.metric == metric:
                return m
        return None
