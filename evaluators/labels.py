"""Human labels of judge metrics: which metrics take one, on what scale (issue #19).

A trace (or a feedback event, or a dataset row) may carry `labels`: metric name → the
human's value on that metric's label scale. The scale says which agreement statistics
apply (`evaluators.agreement`) and how a label maps to the metric's own values, for the
corrected estimate (`evaluators.correction`):

- "ordinal" grades low..high (integers; context_relevance 0–2, as its judge grades each
  context): the metric value is grade / high; the judge's value is compared as the grade
  round(value · high).
- "continuous" shares and ratings in [low, high] (the metric's own range, e.g. [0, 1]):
  compared as they are. A 0/1 verdict is a valid label on a [0, 1] metric.
- "binary" 0/1 verdicts (for verdict metrics; the judge's value is its verdict).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

MAX_METRIC_NAME = 128
MAX_LABELER = 128


@dataclass(frozen=True)
class LabelScale:
    """The scale of one metric's human labels."""

    kind: str  # "binary" | "ordinal" | "continuous", an `evaluators.agreement` scale
    low: float = 0.0
    high: float = 1.0

    def check(self, value: float) -> str | None:
        """Why `value` is not a label on this scale, or None when it is."""
        if not math.isfinite(value) or not self.low <= value <= self.high:
            return f"outside {self.low:g}..{self.high:g}"
        if self.kind == "binary" and value not in (0.0, 1.0):
            return "not 0 or 1"
        if self.kind == "ordinal" and value != round(value):
            return "not an integer grade"
        return None

    def judge_on_label_scale(self, values: np.ndarray) -> np.ndarray:
        """The judge's metric values as labels would read them (grades for ordinal)."""
        if self.kind == "ordinal":
            graded: np.ndarray = np.clip(np.rint(values * self.high), self.low, self.high)
            return graded
        if self.kind == "binary":
            verdict: np.ndarray = (values >= 0.5).astype(np.float64)
            return verdict
        return values

    def label_on_metric_scale(self, values: np.ndarray) -> np.ndarray:
        """Human labels as metric values (grade / high for ordinal)."""
        if self.kind == "ordinal":
            scaled: np.ndarray = values / self.high
            return scaled
        return values

    @property
    def metric_bounds(self) -> tuple[float, float]:
        return (0.0, 1.0) if self.kind == "ordinal" else (self.low, self.high)


_SHARE = LabelScale("continuous", 0.0, 1.0)

LABEL_SCALES: Mapping[str, LabelScale] = MappingProxyType(
    {
        "context_relevance": LabelScale("ordinal", 0.0, 2.0),
        "context_entity_recall": _SHARE,
        "context_precision": _SHARE,
        "context_recall": _SHARE,
        "faithfulness": _SHARE,
        "faithfulness_rating": _SHARE,
        "noise_sensitivity_relevant": _SHARE,
        "noise_sensitivity_irrelevant": _SHARE,
        "answer_relevance": _SHARE,
        "e2e_score": _SHARE,
        "response_relevancy": LabelScale("continuous", -1.0, 1.0),
        # a conversation's labels sit on its first turn's trace (the sessions job's row)
        "session_completeness": _SHARE,
        "session_frustration": _SHARE,
    }
)
"""Every LLM-judge metric and the scale of its human labels."""


def label_scale(metric: str) -> LabelScale:
    """The label scale of a judge metric; ValueError naming the metrics that take labels."""
    scale = LABEL_SCALES.get(metric)
    if scale is None:
        raise ValueError(
            f"metric {metric[:MAX_METRIC_NAME]!r} takes no human labels; "
            f"known: {', '.join(LABEL_SCALES)}"
        )
    return scale
