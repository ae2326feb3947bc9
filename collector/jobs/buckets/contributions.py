"""Traces' contributions to a job's bucket sums and bins (`bucket_stats`), summed with numpy.

The one structure for changes to the sums: a run's new outcomes (`sync`), a rebuild's
chunks and a window's edge rows (`bucket_store`) all gather them here. Updating a dict of
`Sums` per trace, group and metric would be ~1M Python updates for a backlog chunk of
20,000 traces x 3 groups x 15 metrics, a fifth of the scoring's CPU. `Contributions.add`
(a trace's timestamp, stored groups and outcomes, sign) only appends a few interned ids
per trace; `changes` then sums every key at once with `np.bincount`, which adds a key's
values one by one in input order: the entries are laid out in the order `add` was called
(the logarithms come from `math.log`), so each key's sum is the plain one-trace-at-a-time
sum, bit for bit (`tests/jobs/test_contributions.py` holds that reference).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from collector.jobs.buckets.stats import (
    LOG_FLOOR,
    SCORED,
    TRACES,
    BinKey,
    Key,
    Sums,
    binned,
    group_keys,
    outcome_key,
)
from collector.jobs.windows.labels import DEFAULT_MAX_LENGTH
from collector.store.models import BUCKET_S
from evaluators.quantiles import bin_of

Ints = NDArray[np.int64]
Floats = NDArray[np.float64]

_UNCOUNTED = -1
"""The part of an outcome left out of the sums (waiting for a retry, metric not counted)."""
_NO_BIN = np.iinfo(np.int64).min
_NONE: Ints = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class Changes:
    """Summed changes, one entry per non-empty key, in key order (`items`).

    A key's (metric, group key, outcome) is `series[k]`, an index into `names`; bins'
    (metric, group key) is `bin_series[k]`, an index into `bin_names`."""

    names: list[tuple[str, str, str]]
    series: Ints
    bucket: Ints
    n: Ints
    total: Floats
    squares: Floats
    positives: Ints
    log_total: Floats
    log_squares: Floats
    bin_names: list[tuple[str, str]]
    bin_series: Ints
    bin_bucket: Ints
    bin_index: Ints
    bin_n: Ints

    def __len__(self) -> int:
        return len(self.series)

    def items(self) -> Iterator[tuple[Key, Sums]]:
        """The non-empty changes by (metric, group key, bucket, outcome), in key order
        (writers lock bucket rows in this order, so two workers' transactions cannot
        deadlock on them)."""
        columns = zip(
            self.series.tolist(),
            self.bucket.tolist(),
            self.n.tolist(),
            self.total.tolist(),
            self.squares.tolist(),
            self.positives.tolist(),
            self.log_total.tolist(),
            self.log_squares.tolist(),
            strict=True,
        )
        for s, b, n, total, squares, positives, log_total, log_squares in columns:
            metric, grp, outcome = self.names[s]
            yield (
                (metric, grp, b, outcome),
                Sums(n, total, squares, positives, log_total, log_squares),
            )

    def bin_items(self) -> Iterator[tuple[BinKey, int]]:
        """The non-zero changes to the bins' counts by (metric, group key, bucket, bin), in
        key order."""
        bins = zip(
            self.bin_series.tolist(),
            self.bin_bucket.tolist(),
            self.bin_index.tolist(),
            self.bin_n.tolist(),
            strict=True,
        )
        for s, b, index, count in bins:
            metric, grp = self.bin_names[s]
            yield (metric, grp, b, index), count


class Contributions:
    """Gathers traces' contributions, summed at the end (`changes`)."""

    def __init__(
        self, metrics: frozenset[str] | None = None, max_length: int = DEFAULT_MAX_LENGTH
    ) -> None:
        """`metrics`: the metrics counted (None: every stored one)."""
        self.metrics = metrics
        self.max_length = max_length
        self._buckets: list[int] = []
        self._signs: list[int] = []
        self._group_sets: list[int] = []
        self._ends: list[int] = []
        self._parts: list[int] = []
        # interned: group keys, sets of them, (metric, outcome) and outcome parts
        self._grp_of: dict[str, int] = {}
        self._sets: list[tuple[int, ...]] = []
        self._set_of: dict[tuple[tuple[str, str], ...], int] = {}
        self._kinds: list[tuple[str, str]] = [(TRACES, SCORED)]
        self._kind_of: dict[tuple[str, str], int] = {(TRACES, SCORED): 0}
        self._part_of: dict[tuple[str, Any], int] = {}
        self._part_kind: list[int] = []
        self._part_value: list[float] = []
        self._part_scored: list[bool] = []
        self._part_log: list[float] = []
        self._part_bin: list[int] = []
        self._failed_of: dict[tuple[str, str], int] = {}

    def add(
        self,
        ts: float,
        groups: Mapping[str, Any] | None,
        outcomes: Mapping[str, Any],
        sign: int = 1,
    ) -> None:
        """Add (`sign` 1) or take out (-1) one trace's stored outcomes (`outcome_codec`'s
        form) at its timestamp `ts`: the trace counts once under metric TRACES in each of
        its groups (`bucket_stats.group_keys`), and so does each counted outcome, a scored
        one with its value, its square, whether it is positive, the log of it and its
        square (and in its bin for a quantile metric, `bucket_stats.binned`)."""
        self._buckets.append(math.floor(ts / BUCKET_S))
        self._signs.append(sign)
        self._group_sets.append(self._group_set(groups))
        part_of = self._part_of
        parts = self._parts
        for item in outcomes.items():
            try:
                part = part_of[item]
            except KeyError:
                part = part_of[item] = self._new_part(item[0], item[1])
            except TypeError:  # a skip or an error: {"skipped": reason}, {"error": type}
                part = self._new_part(item[0], item[1])
            if part != _UNCOUNTED:
                parts.append(part)
        self._ends.append(len(parts))

    def _group_set(self, groups: Mapping[str, Any] | None) -> int:
        """The interned set of group keys of a trace's groups (`bucket_stats.group_keys`)."""
        key = tuple(groups.items()) if groups else ()
        cached = all(type(v) is str for _, v in key)  # else 1 and True would share one
        if cached and (found := self._set_of.get(key)) is not None:
            return found
        grp_of = self._grp_of
        ids = tuple(grp_of.setdefault(k, len(grp_of)) for k in group_keys(groups, self.max_length))
        self._sets.append(ids)
        if cached:
            self._set_of[key] = len(self._sets) - 1
        return len(self._sets) - 1

    def _new_part(self, metric: str, encoded: Any) -> int:
        """Intern one stored outcome of a metric: its kind, value, log and bin (a skip or
        an error: by its outcome key, every value of it alike)."""
        if self.metrics is not None and metric not in self.metrics:
            return _UNCOUNTED
        outcome = outcome_key(encoded)
        if outcome is None:
            return _UNCOUNTED
        if outcome != SCORED:
            found = self._failed_of.get((metric, outcome))
            if found is not None:
                return found
        kind = self._kind_of.setdefault((metric, outcome), len(self._kinds))
        if kind == len(self._kinds):
            self._kinds.append((metric, outcome))
        part = len(self._part_kind)
        self._part_kind.append(kind)
        self._part_scored.append(outcome == SCORED)
        if outcome == SCORED:
            value = float(encoded)
            self._part_value.append(value)
            self._part_log.append(math.log(max(value, LOG_FLOOR)))
            index = bin_of(value) if binned(metric) else None
            self._part_bin.append(_NO_BIN if index is None else index)
        else:
            self._failed_of[(metric, outcome)] = part
            # no value: never read (only scored parts' values are summed)
            self._part_value.append(0.0)
            self._part_log.append(0.0)
            self._part_bin.append(_NO_BIN)
        return part

    def changes(self) -> Changes:
        """The summed changes (keys whose sums are all 0 left out), in key order.

        Every trace counts once under metric TRACES and once per counted outcome, in each
        of its groups. Entries of the traces come first, then those of the outcomes in
        the order they were added, so a key's values are summed in the order the traces
        came (the counts are integers: their order does not matter)."""
        rows = len(self._buckets)
        if not rows:
            return _EMPTY
        width = max(len(ids) for ids in self._sets)
        sets = np.full((len(self._sets), width), -1, dtype=np.int64)
        for i, ids in enumerate(self._sets):
            sets[i, : len(ids)] = ids
        parts = np.asarray(self._parts, dtype=np.int64)
        counts = np.diff(np.asarray(self._ends, dtype=np.int64), prepend=0).astype(np.int64)
        entry_row = np.concatenate([np.arange(rows), np.repeat(np.arange(rows), counts)])
        entry_part = np.concatenate([np.full(rows, -1, dtype=np.int64), parts])
        grp = sets[np.asarray(self._group_sets, dtype=np.int64)[entry_row]]
        valid = grp >= 0  # (entries, width): -1 where a trace has fewer groups
        row = np.broadcast_to(entry_row[:, None], grp.shape)[valid]
        part = np.broadcast_to(entry_part[:, None], grp.shape)[valid]
        kind = np.zeros(part.shape, dtype=np.int64)  # the trace counts' entries: 0
        outcome = part >= 0
        kind[outcome] = np.asarray(self._part_kind, dtype=np.int64)[part[outcome]]
        return self._sum(row, kind, part, grp[valid])

    def _sum(self, row: Ints, kind: Ints, part: Ints, grp: Ints) -> Changes:
        """Sum the entries (trace `row`, `kind` of outcome, outcome `part` or -1, `grp`)."""
        bucket = np.asarray(self._buckets, dtype=np.int64)
        sign = np.asarray(self._signs, dtype=np.float64)
        n_grp = len(self._grp_of)
        n_series = len(self._kinds) * n_grp
        first = int(bucket.min())
        code = (bucket[row] - first) * n_series + kind * n_grp + grp
        keys, at = _keys(code)
        size = len(keys)
        signs = sign[row]
        scored = part >= 0
        scored[scored] = np.asarray(self._part_scored, dtype=bool)[part[scored]]
        value = np.asarray(self._part_value, dtype=np.float64)[part[scored]]
        logged = np.asarray(self._part_log, dtype=np.float64)[part[scored]]
        s, where = signs[scored], at[scored]
        sums = (
            _sum_by(at, signs, size),
            _sum_by(where, s * value, size),
            _sum_by(where, s * value * value, size),
            _sum_by(where, s * (value > 0), size),
            _sum_by(where, s * logged, size),
            _sum_by(where, s * logged * logged, size),
        )
        kept = np.flatnonzero(np.logical_or.reduce([c != 0 for c in sums]))
        series = keys[kept] % n_series
        key_bucket = keys[kept] // n_series + first
        ranks = _Ranks(self._kinds, list(self._grp_of))
        order = np.lexsort(
            (
                ranks.outcome[series // n_grp],
                key_bucket,
                ranks.grp[series % n_grp],
                ranks.metric[series // n_grp],
            )
        )
        chosen = kept[order]
        names = [(m, g, o) for m, o in self._kinds for g in self._grp_of]
        n, total, squares, positives, log_total, log_squares = (c[chosen] for c in sums)
        return Changes(
            names,
            series[order],
            key_bucket[order],
            n.astype(np.int64),
            total,
            squares,
            positives.astype(np.int64),
            log_total,
            log_squares,
            *self._bins(bucket[row], signs, kind, part, grp, ranks),
        )

    def _bins(
        self, bucket: Ints, sign: Floats, kind: Ints, part: Ints, grp: Ints, ranks: _Ranks
    ) -> tuple[list[tuple[str, str]], Ints, Ints, Ints, Ints]:
        """The bins' changes: per (metric, group key, bucket, bin) the signed count, in
        key order."""
        bins = np.asarray(self._part_bin, dtype=np.int64)
        has = part >= 0
        has[has] = bins[part[has]] != _NO_BIN
        if not has.any():
            return [], _NONE, _NONE, _NONE, _NONE
        n_grp = len(self._grp_of)
        pair = ranks.metric[kind[has]] * n_grp + ranks.grp[grp[has]]
        b, index, count = bucket[has], bins[part[has]], sign[has]
        order = np.lexsort((index, b, pair))
        pair, b, index, count = pair[order], b[order], index[order], count[order]
        new = np.ones(len(pair), dtype=bool)
        new[1:] = (pair[1:] != pair[:-1]) | (b[1:] != b[:-1]) | (index[1:] != index[:-1])
        total = _sum_by(np.cumsum(new) - 1, count, 0).astype(np.int64)
        kept = total != 0
        starts = np.flatnonzero(new)[kept]
        names = [(m, g) for m in ranks.metrics for g in ranks.grps]
        return names, pair[starts], b[starts], index[starts], total[kept]


def _keys(code: Ints) -> tuple[Ints, Ints]:
    """The distinct codes, sorted, and each entry's index among them (`np.unique` with
    `return_inverse`, without its sort when the codes are dense, as a chunk's are)."""
    span = int(code.max()) + 1 if len(code) else 0
    if span > 4 * len(code) + 4096:
        keys, at = np.unique(code, return_inverse=True)
        return keys, at.astype(np.int64, copy=False)
    present = np.bincount(code, minlength=span) > 0
    index = np.cumsum(present) - 1
    return np.flatnonzero(present).astype(np.int64), index[code].astype(np.int64, copy=False)


def _sum_by(at: Ints, weights: Floats, size: int) -> Floats:
    """Per index of `at`, the sum of its weights, added one by one in input order."""
    summed: Floats = np.bincount(at, weights=weights, minlength=size).astype(np.float64, copy=False)
    return summed


class _Ranks:
    """Where each interned metric, outcome and group key comes in sorted order."""

    def __init__(self, kinds: list[tuple[str, str]], grps: list[str]) -> None:
        self.metrics = sorted({m for m, _ in kinds})
        self.grps = sorted(grps)
        outcomes = sorted({o for _, o in kinds})
        self.metric = np.asarray([self.metrics.index(m) for m, _ in kinds], dtype=np.int64)
        self.outcome = np.asarray([outcomes.index(o) for _, o in kinds], dtype=np.int64)
        grp_rank = {g: r for r, g in enumerate(self.grps)}
        self.grp = np.asarray([grp_rank[g] for g in grps], dtype=np.int64)


_EMPTY = Changes(
    [],
    _NONE,
    _NONE,
    _NONE,
    np.zeros(0),
    np.zeros(0),
    _NONE,
    np.zeros(0),
    np.zeros(0),
    [],
    _NONE,
    _NONE,
    _NONE,
    _NONE,
)
