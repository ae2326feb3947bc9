"""How far an SLO's good/bad classification of a judge metric agrees with human labels.

A quality SLO counts a trace good when its metric passes the SLO's rule, `value op
threshold` (`faithfulness >= 0.7`); the budget it burns is only as sound as that
classification. Where humans labelled the same traces (a 0/1 verdict, or a value on the
metric's own scale), their label is classified by the same rule, and the two
classifications of the n labelled traces are compared, **positive = bad** (the event that
spends the error budget):

    b_i = 1 if the judge's value fails the rule (the SLI counts trace i bad), else 0
    h_i = 1 if the human's label fails the rule, else 0
    cohen_kappa  κ = (p_o − p_e) / (1 − p_e),  p_o = (1/n) Σ [b_i = h_i],
                 p_e = b̄·h̄ + (1 − b̄)(1 − h̄)               (agreement beyond chance)
    sensitivity  = Σ b_i h_i / Σ h_i                 (of the traces humans call bad, the
                                                      share the SLI counts bad: burns seen)
    specificity  = Σ (1 − b_i)(1 − h_i) / Σ (1 − h_i) (of those humans call good, the share
                                                      the SLI counts good: no false burn)

These equal scikit-learn's `cohen_kappa_score(h, b)`, `recall_score(h, b)` and
`recall_score(h, b, pos_label=0)`. The statistics and their seeded percentile bootstrap
95% intervals are `evaluators.agreement`'s binary ones over (b, h); a statistic that does
not exist on the data (no human-bad trace, one class only) is `Undefined`, never NaN.
Today's continuous comparison (MAE, Spearman) says how close the scores are; this says
how often the threshold puts a trace on the same side as a human would.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evaluators.agreement import Agreement, agreement
from evaluators.rule import good_mask


@dataclass(frozen=True)
class ThresholdAgreement:
    """The SLI's classification against the humans': the statistics and both bad shares."""

    agreement: Agreement
    """`cohen_kappa`, `sensitivity`, `specificity` (scale "threshold")."""
    bad_share_sli: float | None
    """Share of the labelled traces the SLI counts bad (None: no pairs)."""
    bad_share_human: float | None
    """Share of the labelled traces humans call bad: the error ratio the budget should see."""


def threshold_agreement(
    judge: Sequence[float] | np.ndarray,
    human: Sequence[float] | np.ndarray,
    op: str,
    threshold: float,
    *,
    seed: int = 0,
    n_resamples: int = 1000,
) -> ThresholdAgreement:
    """κ, sensitivity and specificity (positive = bad) of the rule `op threshold` applied
    to the judge's values and to the human labels (both on the metric's scale)."""
    j = np.asarray(judge, dtype=np.float64)
    h = np.asarray(human, dtype=np.float64)
    if j.ndim != 1 or j.shape != h.shape:
        raise ValueError(f"judge and human must be 1-d of one length, got {j.shape} and {h.shape}")
    if not (np.all(np.isfinite(j)) and np.all(np.isfinite(h))):
        raise ValueError("judge and human values must be finite numbers")
    bad_j = (~good_mask(j, op, threshold)).astype(np.float64)
    bad_h = (~good_mask(h, op, threshold)).astype(np.float64)
    found = agreement(bad_j, bad_h, "binary", seed=seed, n_resamples=n_resamples)
    shares = (float(bad_j.mean()), float(bad_h.mean())) if j.size else (None, None)
    return ThresholdAgreement(Agreement("threshold", found.n, found.stats), *shares)
