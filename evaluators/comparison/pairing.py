"""Which rows of A and B are the same question, as aligned arrays for `compare_paired`.

A row is (key, {metric: value or None}); the key is usually `question_key(question)`.
Keys shared by both sides pair up in order of occurrence: the k-th row of a key in A
with the k-th row of that key in B (a question asked twice in each run gives two pairs;
asked three times in A and once in B, one pair and two unmatched A rows). Pairs follow
A's row order. A metric value is valid for a pair when both sides have it (not None and
not missing from the row); invalid cells hold 0.0 in `a` and `b`.
"""

from __future__ import annotations

import math
import unicodedata
from collections import defaultdict, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

Row = tuple[str, Mapping[str, float | None]]


@dataclass(frozen=True)
class Paired:
    """The paired rows: n keys, (n × m) values of A and B and where both exist."""

    keys: tuple[str, ...]
    a: NDArray[np.float64]
    b: NDArray[np.float64]
    valid: NDArray[np.bool_]
    metrics: tuple[str, ...]
    unmatched_a: int
    """Rows of A whose key has no (further) partner in B."""
    unmatched_b: int


def question_key(text: str) -> str:
    """A question normalised for pairing: Unicode NFKC (composed letters, compatibility
    forms such as no-break spaces and full-width characters unified), case-folded
    (Cyrillic included), whitespace runs collapsed to one space, stripped. Nothing else
    changes: punctuation and the distinct letters е and ё stay as written."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def pair_rows(a: Sequence[Row], b: Sequence[Row], metrics: Sequence[str]) -> Paired:
    """Pair A's and B's rows by key (k-th occurrence with k-th) for `metrics`."""
    names = tuple(metrics)
    if len(set(names)) != len(names):
        raise ValueError("metrics must be distinct")
    waiting: defaultdict[str, deque[int]] = defaultdict(deque)
    for i, (key, _) in enumerate(b):
        waiting[key].append(i)
    pairs = [(i, waiting[key].popleft()) for i, (key, _) in enumerate(a) if waiting.get(key)]
    n, m = len(pairs), len(names)
    values_a, values_b = np.zeros((n, m)), np.zeros((n, m))
    valid = np.zeros((n, m), dtype=bool)
    for row, (i, k) in enumerate(pairs):
        for j, metric in enumerate(names):
            x = _value(a[i], metric, "A")
            y = _value(b[k], metric, "B")
            if x is not None and y is not None:
                values_a[row, j], values_b[row, j], valid[row, j] = x, y, True
    return Paired(
        keys=tuple(a[i][0] for i, _ in pairs),
        a=values_a,
        b=values_b,
        valid=valid,
        metrics=names,
        unmatched_a=len(a) - n,
        unmatched_b=len(b) - n,
    )


def _value(row: Row, metric: str, side: str) -> float | None:
    value = row[1].get(metric)
    if value is None:
        return None
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{side} row {row[0]!r} has a non-finite {metric}: {value!r}")
    return x
