"""Explain a metric's change: rank the slices (one or two dimensions) by their share of it.

The window's per-trace outcomes are compared with the baseline before it (default 7 days):
`collector.store.slice_stats.cross_tab` returns the moments per slice-value combination,
each dimension keeps its `max_values` most frequent values (the rest become "other"),
and `evaluators.attribution.attribute` decomposes the change of the mean over the
slices of every single dimension and every pair of dimensions. The headline names the
slice with the largest share of the change, narrowed to a pair ("tenant acme, version
v7") when that pair alone carries at least `NARROW` of the single slice's contribution;
`Explanation.named` shows a topic slice with its label ("topic 12 (card, delivery)").

A share beyond ±100% is a mix effect, not an error: the slices of a dimension add up to
the whole change, so when one moved the mean by more than the net change, the others
moved it the other way by the difference. The headline and `mix_note` say so in words
("127% of the rise is version v1, while the other slices together moved −27% against it").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from itertools import combinations

import numpy as np
from sqlalchemy.orm import Session

from collector.jobs.windows.labels import OTHER
from collector.store.slice_stats import CrossTab, cross_tab
from evaluators.attribution import Moments, attribute

NARROW = 0.8
WHOLE = 0.99
"""A slice with this share of both periods is the whole traffic, not an explanation."""
MIN_VALUES = 2
"""A side with fewer values than this leaves the change undefined."""


@dataclass(frozen=True, slots=True)
class SliceChange:
    """One slice's part in the change."""

    slice: tuple[tuple[str, str], ...]
    """((dimension, value), ...): one or two dimensions."""
    n_window: int
    n_baseline: int
    share_window: float
    share_baseline: float
    mean_window: float | None
    mean_baseline: float | None
    contribution: float
    low: float
    high: float
    fraction: float
    """contribution / overall change."""
    p_value: float | None
    shown: tuple[str, ...] = ()
    """How each value of `slice` is shown, when not as itself (a topic id with its label)."""

    @property
    def name(self) -> str:
        values = self.shown or tuple(v for _, v in self.slice)
        return ", ".join(f"{d} {v}" for (d, _), v in zip(self.slice, values, strict=True))

    def named(self, names: Mapping[tuple[str, str], str]) -> SliceChange:
        """This slice with its values shown by `names` ((dimension, value) -> text)."""
        shown = tuple(names.get(pair, pair[1]) for pair in self.slice)
        return self if shown == tuple(v for _, v in self.slice) else replace(self, shown=shown)


@dataclass(frozen=True)
class Explanation:
    metric: str
    since: datetime
    until: datetime
    baseline_since: datetime
    window_mean: float
    baseline_mean: float
    delta: float
    n_window: int
    n_baseline: int
    slices: tuple[SliceChange, ...]
    """Every slice of one and of two dimensions, largest share of the change first."""
    top: SliceChange | None

    def headline(self) -> str:
        verb = "fell" if self.delta < 0 else "rose"
        text = (
            f"{self.metric} {verb} {abs(self.delta):.3g} "
            f"({self.baseline_mean:.3g} -> {self.window_mean:.3g})"
        )
        if self.top is not None and self.delta != 0:
            text += f"; {self.top.fraction:.0%} of the {self.what} is {self.top.name}"
            if self.top.fraction > 1:
                text += (
                    f", while the other slices together moved {1 - self.top.fraction:.0%} "
                    "against it"
                )
        return text

    @property
    def what(self) -> str:
        return "drop" if self.delta < 0 else "rise"

    def named(self, names: Mapping[tuple[str, str], str]) -> Explanation:
        """The explanation with slice values shown by `names` ((dimension, value) ->
        text), e.g. a topic id with its label (`collector.store.topics.topic_names`)."""
        return replace(
            self,
            slices=tuple(c.named(names) for c in self.slices),
            top=None if self.top is None else self.top.named(names),
        )

    def mix_note(self, shown: Sequence[SliceChange]) -> str | None:
        """Words for the shares beyond ±100% among `shown` (None when there is none)."""
        beyond = [c for c in shown if abs(c.fraction) > 1]
        if not beyond or self.delta == 0:
            return None
        c = max(beyond, key=lambda c: abs(c.fraction))
        text = (
            f"shares beyond ±100% are mix effects: {c.name} alone moved the mean "
            f"{c.contribution:+.3g}, {c.fraction:.0%} of the net {self.what} of "
            f"{self.delta:+.3g}, and the other {_dimensions(c)} slices together "
            f"{self.delta - c.contribution:+.3g} ({1 - c.fraction:.0%}), the other way; "
            "a dimension's slices add up to 100%"
        )
        if abs(c.fraction) > 3:
            text += ", so a share this large says the slices largely cancelled out"
        return text


def _dimensions(c: SliceChange) -> str:
    """ "version", "tenant × version": the dimensions whose slices `c` is one of."""
    return " × ".join(d for d, _ in c.slice)


def _fold(tab: CrossTab, max_values: int) -> list[tuple[str, ...]]:
    """Cell keys with each dimension's values beyond its `max_values` most frequent as
    "other"."""
    keys = tab.keys
    kept = []
    for i in range(len(tab.dimensions)):
        counts: dict[str, float] = {}
        for key, n in zip(keys, tab.n, strict=True):
            counts[key[i]] = counts.get(key[i], 0.0) + float(n)
        ranked = sorted(counts, key=lambda v: (-counts[v], v))
        kept.append(set(ranked[:max_values]))
    return [tuple(v if v in kept[i] else OTHER for i, v in enumerate(key)) for key in keys]


def _changes(
    tab: CrossTab, keys: list[tuple[str, ...]], dims: tuple[int, ...]
) -> list[SliceChange]:
    """The decomposition over the slices of the dimensions `dims`."""
    labels = [tuple(key[i] for i in dims) for key in keys]
    names = sorted(set(labels))
    index = {name: j for j, name in enumerate(names)}
    cell = np.array([index[label] for label in labels], dtype=np.int64)
    size = len(names)

    def moments(mask: np.ndarray) -> Moments:
        return Moments.of(
            np.bincount(cell[mask], tab.n[mask], size),
            np.bincount(cell[mask], tab.total[mask], size),
            np.bincount(cell[mask], tab.squares[mask], size),
        )

    window, baseline = moments(tab.in_window), moments(~tab.in_window)
    result = attribute(window, baseline)
    fraction = result.fraction
    out = []
    for j, name in enumerate(names):
        nw, nb = int(window.n[j]), int(baseline.n[j])
        out.append(
            SliceChange(
                slice=tuple((tab.dimensions[i], v) for i, v in zip(dims, name, strict=True)),
                n_window=nw,
                n_baseline=nb,
                share_window=float(result.share_window[j]),
                share_baseline=float(result.share_baseline[j]),
                mean_window=float(result.mean_window[j]) if nw else None,
                mean_baseline=float(baseline.means()[j]) if nb else None,
                contribution=float(result.contribution[j]),
                low=float(result.low[j]),
                high=float(result.high[j]),
                fraction=float(fraction[j]),
                p_value=float(result.p_value[j]) if result.tested[j] else None,
            )
        )
    return out


def explain(
    session: Session,
    *,
    jobs: Sequence[str],
    metric: str,
    since: datetime,
    until: datetime,
    baseline: timedelta,
    dimensions: Sequence[str],
    max_values: int = 20,
) -> Explanation | None:
    """The change of `metric` over `[since, until)` against the `baseline` before it,
    attributed to slices; None when either side has fewer than `MIN_VALUES` values."""
    if not dimensions:
        raise ValueError("at least one slice dimension is needed")
    baseline_since = since - baseline
    tab = cross_tab(
        session,
        jobs=jobs,
        metric=metric,
        baseline_since=baseline_since,
        since=since,
        until=until,
        dimensions=dimensions,
    )
    n_w, n_b = float(tab.n[tab.in_window].sum()), float(tab.n[~tab.in_window].sum())
    if n_w < MIN_VALUES or n_b < MIN_VALUES:
        return None
    keys = _fold(tab, max_values)
    width = len(dimensions)
    changes: list[SliceChange] = []
    trivial: set[int] = set()
    for dim in range(width):
        for c in _changes(tab, keys, (dim,)):
            if c.share_window >= WHOLE and c.share_baseline >= WHOLE:
                trivial.add(dim)  # one value is all the traffic: it explains nothing
            else:
                changes.append(c)
    informative = [d for d in range(width) if d not in trivial]
    for dims in combinations(informative, 2):
        changes.extend(_changes(tab, keys, dims))
    overall = attribute(
        Moments.of([n_w], [tab.total[tab.in_window].sum()], [0.0]),
        Moments.of([n_b], [tab.total[~tab.in_window].sum()], [0.0]),
    )
    ranked = sorted(changes, key=lambda c: (-c.fraction, c.name))
    return Explanation(
        metric=metric,
        since=since,
        until=until,
        baseline_since=baseline_since,
        window_mean=overall.window_mean,
        baseline_mean=overall.baseline_mean,
        delta=overall.delta,
        n_window=int(n_w),
        n_baseline=int(n_b),
        slices=_distinct(ranked),
        top=_top(ranked),
    )


def _distinct(ranked: Sequence[SliceChange]) -> tuple[SliceChange, ...]:
    """The ranking without slices that are the same traces as one ranked before them
    ("version v7, language en" when all of v7 is English): same counts, same change."""
    seen: set[tuple[int, int, float]] = set()
    out = []
    for c in ranked:
        key = (c.n_window, c.n_baseline, round(c.contribution, 12))
        if key not in seen:
            seen.add(key)
            out.append(c)
    return tuple(out)


def _top(ranked: Sequence[SliceChange]) -> SliceChange | None:
    """The single-dimension slice with the largest share of the change, narrowed to the
    best pair inside it when that pair carries `NARROW` of its contribution."""
    singles = [c for c in ranked if len(c.slice) == 1 and c.fraction > 0]
    if not singles:
        return None
    best = singles[0]
    inside = [
        c for c in ranked if len(c.slice) == 2 and best.slice[0] in c.slice and c.fraction > 0
    ]
    if inside and best.contribution != 0:
        pair = inside[0]
        if pair.contribution / best.contribution >= NARROW:
            return pair
    return best
