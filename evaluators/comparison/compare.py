"""Compare a candidate B with a baseline A on several metrics at once (issue #20).

`compare_paired` takes the same questions under A and B (the stronger design: per-question
differences cancel question difficulty) and runs the paired statistics of
`evaluators.comparison.paired`; `compare_unpaired` takes two independent samples per metric
and runs `evaluators.comparison.two_sample`. Both correct the p-values across the metrics
compared in the call (`multiplicity`), report the minimum detectable effect (`power`) and
return a `Comparison`. A metric without enough data is `Incomparable` with the reason.

Randomness: one `numpy.random.SeedSequence(seed)`, split into independent streams for the
bootstrap and the permutation test; the same seed gives the same numbers.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evaluators.comparison import paired, two_sample
from evaluators.comparison.multiplicity import CORRECTIONS, adjust
from evaluators.comparison.power import mde
from evaluators.comparison.result import Comparison, Incomparable, MetricComparison
from evaluators.comparison.spread import differences, has_spread

MIN_N = 2
PAIRED_TEST = "paired sign-flip permutation"


@dataclass(frozen=True)
class _Settings:
    resamples: int
    confidence: float
    alpha: float
    correction: str
    power: float
    seed: int


def _settings(
    resamples: int, confidence: float, alpha: float, correction: str, power: float, seed: int
) -> _Settings:
    count, root = _integer(resamples), _integer(seed)
    if count is None or count < 1:
        raise ValueError(f"resamples must be a positive integer, got {resamples!r}")
    for name, value in (("confidence", confidence), ("alpha", alpha), ("power", power)):
        if not 0.0 < value < 1.0:
            raise ValueError(f"{name} must lie strictly between 0 and 1, got {value!r}")
    if correction not in CORRECTIONS:
        raise ValueError(f"unknown correction {correction!r}; known: {', '.join(CORRECTIONS)}")
    if root is None or root < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return _Settings(count, float(confidence), float(alpha), correction, float(power), root)


def _integer(value: object) -> int | None:
    """`value` as an int if it is an integer (numpy's included, bool not), else None."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None


def _finish(rows: list[MetricComparison], skipped: list[Incomparable], s: _Settings) -> Comparison:
    """Adjust the p-values across `rows` and wrap everything up."""
    adjusted = adjust(np.array([r.p_value for r in rows]), s.correction) if rows else np.empty(0)
    done = tuple(
        replace(r, p_adjusted=float(p), significant=float(p) < s.alpha)
        for r, p in zip(rows, adjusted, strict=True)
    )
    return Comparison(
        metrics=done,
        skipped=tuple(skipped),
        correction=s.correction,
        alpha=s.alpha,
        confidence=s.confidence,
        resamples=s.resamples,
        seed=s.seed,
        power=s.power,
    )


def _binary_kind(
    a: NDArray[np.float64], b: NDArray[np.float64], declared: bool | None, metric: str
) -> bool:
    """Whether a metric is a 0/1 share: as declared (checked) or as its values say."""
    values_01 = all(bool(np.all((x == 0.0) | (x == 1.0))) for x in (a, b))
    if declared and not values_01:
        raise ValueError(f"metric {metric!r} is declared binary but has values other than 0/1")
    return values_01 if declared is None else declared


def _binary_flags(binary: Sequence[bool] | None, m: int) -> list[bool | None]:
    if binary is None:
        return [None] * m
    flags = list(binary)
    if len(flags) != m:
        raise ValueError(f"binary must give one flag per metric ({m}), got {len(flags)}")
    return [bool(f) for f in flags]


def compare_paired(
    a: ArrayLike,
    b: ArrayLike,
    metrics: Sequence[str],
    *,
    valid: ArrayLike | None = None,
    binary: Sequence[bool] | None = None,
    resamples: int = 10_000,
    confidence: float = 0.95,
    alpha: float = 0.05,
    correction: str = "holm",
    power: float = 0.8,
    seed: int = 0,
    tie_tolerance: float = 0.0,
) -> Comparison:
    """Compare B with A on the same questions: row i of `a` and `b` (n × m) is one
    question, column j is `metrics[j]`; `valid` (n × m) is False where either side has no
    score (the values there are ignored). `binary` marks 0/1 metrics (auto-detected when
    None; declared 0/1 values are checked). Questions where b − a is within
    `tie_tolerance` count as ties."""
    s = _settings(resamples, confidence, alpha, correction, power, seed)
    names = tuple(metrics)
    if len(set(names)) != len(names):
        raise ValueError("metrics must be distinct")
    va, vb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if va.ndim != 2 or va.shape != vb.shape or va.shape[1] != len(names):
        raise ValueError(
            f"a and b must be (questions × {len(names)} metrics) arrays of one shape, "
            f"got {va.shape} and {vb.shape}"
        )
    mask = np.ones(va.shape, dtype=bool) if valid is None else np.asarray(valid)
    if mask.dtype != np.bool_ or mask.shape != va.shape:
        raise ValueError(f"valid must be a boolean array of shape {va.shape}")
    if not (np.all(np.isfinite(va[mask])) and np.all(np.isfinite(vb[mask]))):
        raise ValueError("a and b must be finite where valid (mark missing scores in `valid`)")
    if not (math.isfinite(tie_tolerance) and tie_tolerance >= 0.0):
        raise ValueError(f"tie_tolerance must be a non-negative number, got {tie_tolerance!r}")
    flags = _binary_flags(binary, len(names))

    d = np.where(mask, differences(np.where(mask, va, 0.0), np.where(mask, vb, 0.0)), 0.0)
    _, _, n = paired.moments(d, mask)
    comparable = [j for j in range(len(names)) if n[j] >= MIN_N]
    skipped = [
        Incomparable(names[j], "no pairs with both scores" if n[j] == 0 else "fewer than 2 pairs")
        for j in range(len(names))
        if n[j] < MIN_N
    ]
    if not comparable:
        return _finish([], skipped, s)
    kinds = {
        j: _binary_kind(va[mask[:, j], j], vb[mask[:, j], j], flags[j], names[j])
        for j in comparable
    }

    cols = np.array(comparable)
    v = mask[:, cols]
    rows = v.any(axis=1)  # questions with no compared score change nothing: leave them out
    v, dc = v[rows], d[rows][:, cols]
    xa, xb = va[rows][:, cols], vb[rows][:, cols]
    mean, sd, n = paired.moments(dc, v)
    boot_seed, perm_seed = np.random.SeedSequence(s.seed).spawn(2)
    flip = paired.sign_flip_p_values(dc, s.resamples, perm_seed)
    lower, upper = paired.bootstrap_mean_intervals(dc, v, s.resamples, s.confidence, boot_seed)
    test = PAIRED_TEST + (" (exact)" if flip.exact else "")

    out = []
    for k, j in enumerate(comparable):
        ok = v[:, k]
        sa, sb, dj = xa[ok, k], xb[ok, k], dc[ok, k]
        spread = has_spread(dj, float(max(np.abs(sa).max(), np.abs(sb).max())))
        diff = float(mean[k])
        wins, ties, losses = paired.win_tie_loss(dj, tie_tolerance)
        nk = int(n[k])
        out.append(
            MetricComparison(
                metric=names[j],
                paired=True,
                n=nk,
                n_a=nk,
                n_b=nk,
                mean_a=float(sa.mean()),
                mean_b=float(sb.mean()),
                diff=diff,
                ci_lower=float(lower[k]) if spread else diff,
                ci_upper=float(upper[k]) if spread else diff,
                effect_size=diff / float(sd[k]) if spread else None,
                effect_size_kind="cohens_dz",
                p_value=float(flip.p_values[k]),
                p_adjusted=float(flip.p_values[k]),
                significant=False,
                test=test,
                mde=mde(float(sd[k]) / math.sqrt(nk), s.alpha, s.power) if spread else None,
                wins=wins,
                ties=ties,
                losses=losses,
                binary=kinds[j],
            )
        )
    return _finish(out, skipped, s)


def compare_unpaired(
    a: Mapping[str, ArrayLike],
    b: Mapping[str, ArrayLike],
    *,
    binary: Sequence[bool] | Mapping[str, bool] | None = None,
    resamples: int = 10_000,
    confidence: float = 0.95,
    alpha: float = 0.05,
    correction: str = "holm",
    power: float = 0.8,
    seed: int = 0,
) -> Comparison:
    """Compare B with A from two independent samples per metric ({metric: 1-d values}).
    Metrics are the keys present on both sides, in `a`'s order; a metric on one side only
    is skipped. `binary`: one flag per key of `a` (in its order) or {metric: flag}; absent
    flags are auto-detected (all values 0 or 1)."""
    s = _settings(resamples, confidence, alpha, correction, power, seed)
    if isinstance(binary, Mapping):
        declared: dict[str, bool] = {k: bool(f) for k, f in binary.items()}
    else:
        declared = {
            k: f for k, f in zip(a, _binary_flags(binary, len(a)), strict=True) if f is not None
        }
    skipped = [Incomparable(k, "only A has this metric") for k in a if k not in b]
    skipped += [Incomparable(k, "only B has this metric") for k in b if k not in a]
    chosen: list[tuple[str, NDArray[np.float64], NDArray[np.float64], bool]] = []
    for name in (k for k in a if k in b):
        xa, xb = _sample(a[name], name, "A"), _sample(b[name], name, "B")
        reason = _too_small(xa, "A") or _too_small(xb, "B")
        if reason:
            skipped.append(Incomparable(name, reason))
        else:
            chosen.append((name, xa, xb, _binary_kind(xa, xb, declared.get(name), name)))
    if not chosen:
        return _finish([], skipped, s)
    lower, upper = two_sample.bootstrap_diff_intervals(
        [x for _, x, _, _ in chosen],
        [y for _, _, y, _ in chosen],
        s.resamples,
        s.confidence,
        np.random.SeedSequence(s.seed),
    )
    out = []
    for k, (name, xa, xb, use_binary) in enumerate(chosen):
        scale = float(max(np.abs(xa).max(), np.abs(xb).max()))
        spread_a, spread_b = has_spread(xa, scale), has_spread(xb, scale)
        # values without spread beyond rounding are taken as the constant they mean
        xa_ = xa if spread_a else np.full_like(xa, xa.mean())
        xb_ = xb if spread_b else np.full_like(xb, xb.mean())
        diff = float(xb.mean() - xa.mean())
        if use_binary:
            p, test = two_sample.two_proportion_z(xa, xb), "two-proportion z"
            effect: float | None = two_sample.cohens_h(float(xa.mean()), float(xb.mean()))
            kind = "cohens_h"
        else:
            p, test = two_sample.welch(xa_, xb_)
            effect, kind = two_sample.hedges_g(xa_, xb_), "hedges_g"
        se = two_sample.standard_error(xa_, xb_)
        any_spread = spread_a or spread_b
        out.append(
            MetricComparison(
                metric=name,
                paired=False,
                n=int(xa.size + xb.size),
                n_a=int(xa.size),
                n_b=int(xb.size),
                mean_a=float(xa.mean()),
                mean_b=float(xb.mean()),
                diff=diff,
                ci_lower=float(lower[k]) if any_spread else diff,
                ci_upper=float(upper[k]) if any_spread else diff,
                effect_size=effect,
                effect_size_kind=kind,
                p_value=p,
                p_adjusted=p,
                significant=False,
                test=test,
                mde=mde(se, s.alpha, s.power),
                binary=use_binary,
            )
        )
    return _finish(out, skipped, s)


def _sample(values: ArrayLike, metric: str, side: str) -> NDArray[np.float64]:
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"{side}'s {metric} must be a 1-d array, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{side}'s {metric} has non-finite values (leave missing scores out)")
    return x


def _too_small(x: NDArray[np.float64], side: str) -> str | None:
    if x.size == 0:
        return f"{side} has no scores"
    if x.size < MIN_N:
        return f"{side} has fewer than {MIN_N} scores"
    return None
