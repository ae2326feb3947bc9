"""A judge metric's per-sample outcomes against human labels: agreement and corrected mean.

The glue between the label scales (`evaluators.labels`), the agreement statistics
(`evaluators.agreement`) and the PPI correction (`evaluators.correction`), used by
`ragpulse evaluate` over a dataset whose rows carry `labels`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from evaluators.agreement import Agreement, Undefined, agreement
from evaluators.correction import Corrected, ppi_mean
from evaluators.judge.metric import JudgeScore
from evaluators.labels import LABEL_SCALES
from evaluators.outcome import Outcome, Score


@dataclass(frozen=True)
class LabelledMetric:
    """A judge metric against the human labels of a dataset: agreement of the judge (the
    mean over judge models, and each model alone) and the corrected mean."""

    metric: str
    agreement: Agreement
    by_model: Mapping[str, Agreement]
    corrected: Corrected | Undefined

    def agreement_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "scale": self.agreement.scale,
            "n": self.agreement.n,
            "stats": self.agreement.to_dict(),
        }
        if self.by_model:
            out["by_model"] = {m: a.to_dict() for m, a in self.by_model.items()}
        return out

    def corrected_dict(self) -> dict[str, Any]:
        if isinstance(self.corrected, Corrected):
            return self.corrected.to_dict()
        return {
            "value": None,
            "ci_lower": None,
            "ci_upper": None,
            "n_labelled": self.agreement.n,
            "undefined": self.corrected.reason,
        }


def compare_with_labels(
    metric: str,
    outcomes: Sequence[Outcome],
    labels: Sequence[Mapping[str, float]],
    *,
    seed: int = 0,
) -> LabelledMetric | None:
    """Agreement and PPI-corrected mean of `metric` over parallel outcomes and labels.

    Pairs are the samples the judge scored that carry a label for `metric`; the corrected
    mean uses every scored sample. None when the metric takes no labels or no sample is
    both scored and labelled. `by_model` is filled when more than one judge model scored.
    """
    if len(outcomes) != len(labels):
        raise ValueError("outcomes and labels must be parallel")
    scale = LABEL_SCALES.get(metric)
    if scale is None:
        return None
    scored = [(o, lab) for o, lab in zip(outcomes, labels, strict=True) if isinstance(o, Score)]
    pairs = [(o, lab[metric]) for o, lab in scored if metric in lab]
    if not pairs:
        return None
    judge_all = np.array([o.value for o, _ in scored], dtype=np.float64)
    judge = np.array([o.value for o, _ in pairs], dtype=np.float64)
    human = np.array([h for _, h in pairs], dtype=np.float64)
    found = agreement(scale.judge_on_label_scale(judge), human, scale.kind, seed=seed)
    models = sorted({m for o, _ in pairs if isinstance(o, JudgeScore) for m in o.by_model})
    by_model: dict[str, Agreement] = {}
    if len(models) > 1:
        for model in models:
            own = [
                (o.by_model[model], h)
                for o, h in pairs
                if isinstance(o, JudgeScore) and model in o.by_model
            ]
            j = np.array([v for v, _ in own], dtype=np.float64)
            h = np.array([v for _, v in own], dtype=np.float64)
            by_model[model] = agreement(scale.judge_on_label_scale(j), h, scale.kind, seed=seed)
    corrected = ppi_mean(
        judge_all, judge, scale.label_on_metric_scale(human), bounds=scale.metric_bounds
    )
    return LabelledMetric(metric, found, MappingProxyType(by_model), corrected)
