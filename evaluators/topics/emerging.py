"""Emerging topics: a topic whose share of the traffic rose beyond chance (issue 41).

Per topic i, `a_i` of the `N_r` traces of the recent window (e.g. the last 24 hours) and
`b_i` of the `N_b` traces of the baseline before it (the 7 days before) have the topic.
Under "the share did not change", and given the topic's `k_i = a_i + b_i` traces of both
windows, `a_i` is hypergeometric: k_i draws from N = N_r + N_b traces of which N_r are
recent. The one-sided p-value of a rise is Fisher's exact test,

    p_i = P(X >= a_i),  X ~ Hypergeom(N, k_i, N_r)

exact at any count, so a topic of three traces does not read as a surge. The p-values of
all topics are corrected together by Benjamini-Hochberg (false discovery rate `alpha`):
with 50 topics, a few would otherwise cross 1% by chance every day. A significant rise
must also be large enough to act on: the recent share at least `min_ratio` times the
baseline share, and `min_change` (absolute, 0.01 = one percentage point) above it.

A topic first found inside the recent window (`new`) is emerging with the effect alone
(its baseline share is that of the traces the re-clustering gave it retroactively, near
zero for a really new intent), when it has at least `min_traces` recent traces. The
first clustering ever finds every topic at once: `new` is for the topics found after it,
which the caller decides. With no baseline traffic, no topic is emerging (nothing to
compare with: a topic that was always there would read as new).

    emerging_i = [ (p̃_i < alpha or new_i) and a_i >= min_traces
                   and s_r >= min_ratio * s_b and s_r - s_b >= min_change ]
    s_r = a_i / N_r,  s_b = b_i / N_b,  p̃ = BH(p)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import false_discovery_control, hypergeom

ALPHA = 0.01
MIN_RATIO = 1.5
MIN_CHANGE = 0.01
MIN_TRACES = 10


@dataclass(frozen=True)
class EmergingOptions:
    """The test's false discovery rate and the smallest rise worth a ticket."""

    alpha: float = ALPHA
    min_ratio: float = MIN_RATIO
    min_change: float = MIN_CHANGE
    min_traces: int = MIN_TRACES

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"alpha must lie in (0, 1), got {self.alpha}")
        if self.min_ratio < 1.0:
            raise ValueError(f"min_ratio must be at least 1, got {self.min_ratio}")
        if not 0.0 <= self.min_change < 1.0:
            raise ValueError(f"min_change must lie in [0, 1), got {self.min_change}")
        if self.min_traces < 1:
            raise ValueError(f"min_traces must be at least 1, got {self.min_traces}")


@dataclass(frozen=True)
class Emergence:
    """One topic's recent and baseline traffic and whether it is emerging."""

    topic: int
    recent: int
    baseline: int
    recent_share: float | None
    """a / N_r; None without recent traffic."""
    baseline_share: float | None
    """b / N_b; None without baseline traffic."""
    p_value: float | None
    """One-sided Fisher p of a rise; None when there is no traffic to test."""
    p_adjusted: float | None
    """Benjamini-Hochberg over the topics tested."""
    new: bool
    emerging: bool

    @property
    def change(self) -> float | None:
        """Recent share minus baseline share (None when either is undefined)."""
        if self.recent_share is None or self.baseline_share is None:
            return None
        return self.recent_share - self.baseline_share


def _checked(name: str, values: Sequence[int], size: int) -> np.ndarray:
    arr = np.asarray(values, dtype=np.int64)
    if arr.shape != (size,):
        raise ValueError(f"{name} must have one count per topic ({size}), got {arr.shape}")
    if (arr < 0).any():
        raise ValueError(f"{name} must not be negative")
    return arr


def rise_p_values(
    recent: np.ndarray, baseline: np.ndarray, recent_total: int, baseline_total: int
) -> np.ndarray:
    """One-sided Fisher exact p-values of a rise of each topic's share (module docstring)."""
    k = recent + baseline
    total = recent_total + baseline_total
    # P(X >= a) = sf(a - 1)
    p = hypergeom.sf(recent - 1, total, k, recent_total)
    return np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0)


def emerging_topics(
    topics: Sequence[int],
    recent: Sequence[int],
    baseline: Sequence[int],
    *,
    recent_total: int,
    baseline_total: int,
    new: Sequence[bool] | None = None,
    options: EmergingOptions | None = None,
) -> list[Emergence]:
    """Each topic's rise test (module docstring), in the order given.

    `recent`/`baseline`: the topic's traces in each window; `recent_total`/`baseline_total`:
    all traces of each window (the denominators of the shares, at least the topics' sums);
    `new`: the topic was first found inside the recent window (default: none is)."""
    opts = options or EmergingOptions()
    size = len(topics)
    a = _checked("recent", recent, size)
    b = _checked("baseline", baseline, size)
    fresh = np.asarray(new if new is not None else [False] * size, dtype=bool)
    if fresh.shape != (size,):
        raise ValueError(f"new must have one flag per topic ({size})")
    if recent_total < int(a.sum()) or baseline_total < int(b.sum()):
        raise ValueError("a window's total must be at least the sum of its topics' traces")
    if recent_total == 0 or baseline_total == 0 or size == 0:
        return [
            Emergence(
                topic=int(t),
                recent=int(a[i]),
                baseline=int(b[i]),
                recent_share=a[i] / recent_total if recent_total else None,
                baseline_share=b[i] / baseline_total if baseline_total else None,
                p_value=None,
                p_adjusted=None,
                new=bool(fresh[i]),
                emerging=False,
            )
            for i, t in enumerate(topics)
        ]
    p = rise_p_values(a, b, recent_total, baseline_total)
    adjusted = np.asarray(false_discovery_control(p, method="bh"), dtype=np.float64)
    s_r = a / recent_total
    s_b = b / baseline_total
    effect = (s_r >= opts.min_ratio * s_b) & (s_r - s_b >= opts.min_change)
    rose = (adjusted < opts.alpha) | fresh
    flags = rose & effect & (a >= opts.min_traces)
    return [
        Emergence(
            topic=int(t),
            recent=int(a[i]),
            baseline=int(b[i]),
            recent_share=float(s_r[i]),
            baseline_share=float(s_b[i]),
            p_value=float(p[i]),
            p_adjusted=float(adjusted[i]),
            new=bool(fresh[i]),
            emerging=bool(flags[i]),
        )
        for i, t in enumerate(topics)
    ]
