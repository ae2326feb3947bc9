"""compare_rows: pairing decided per metric, one correction over every metric."""

from __future__ import annotations

import numpy as np

from evaluators.comparison.multiplicity import holm
from evaluators.comparison.rows import compare_rows


def test_a_sampled_metric_is_compared_unpaired_beside_a_paired_one() -> None:
    """Shadow traffic: both versions answer the same 200 questions; `x` is scored on every
    trace (paired), `y` on a tenth of each side's traces, rarely the same question's
    (too few pairs: unpaired). Holm runs over both p-values together."""
    rng = np.random.default_rng(1)
    a, b = [], []
    for i in range(200):
        xa = float(rng.random() < 0.6)
        xb = float(rng.random() < (0.8 if xa else 0.4))
        ya = float(rng.random()) if i % 10 == 0 else None
        yb = float(rng.random()) if i % 10 == 5 else None
        a.append((f"Вопрос {i}", {"x": xa, "y": ya}))
        b.append((f"вопрос  {i} ", {"x": xb, "y": yb}))  # the same question, normalised
    found = compare_rows(a, b, ["x", "y"], resamples=2000, seed=0)
    x, y = found.comparison.get("x"), found.comparison.get("y")
    assert x is not None and y is not None
    assert x.paired and x.n == 200 and not y.paired and (y.n_a, y.n_b) == (20, 20)
    expected = holm(np.array([x.p_value, y.p_value]))
    assert [x.p_adjusted, y.p_adjusted] == list(expected)
    assert found.comparison.correction == "holm" and found.paired and found.pairs == 200
    text = found.describe()
    assert "paired on 200 shared questions for x" in text and "unpaired" in text and "for y" in text


def test_forced_unpaired_and_forced_paired() -> None:
    rows = [(f"q{i}", {"x": float(i % 3 == 0)}) for i in range(50)]
    unpaired = compare_rows(rows, rows, ["x"], pairing="unpaired", resamples=500)
    assert not unpaired.paired and not unpaired.comparison.metrics[0].paired
    paired = compare_rows(rows, rows, ["x"], pairing="paired", resamples=500)
    assert paired.paired and paired.comparison.metrics[0].p_value == 1.0
