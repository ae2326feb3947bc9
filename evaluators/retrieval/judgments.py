"""Ranked retrieval joined with ground truth, as numpy arrays shared by the metric families.

`judge(samples)` turns a batch of samples into a `Judgments` value:

- `gains`: float64 matrix (rows x ranks); entry (i, r) is the judged grade of the document
  a row retrieved at rank r + 1, or 0 when that document is unjudged, judged <= 0, has
  no key, or repeats a key already retrieved higher (a document counts once, at its
  best rank, so recall never exceeds 1). Rows are zero-padded to the longest list.
- `ideal`: float64 matrix (rows x n); each row holds the positive grades of ALL judged
  documents of its sample (retrieved or not) in descending order, zero-padded: the ideal
  ranking of NDCG, and the count of relevant documents for recall.

Every sample with ground truth gets a row, and a sample that retrieved nothing (an empty
`contexts`) gets an all-zero row: it is a miss, 0 for every metric, as trec_eval -c counts
a judged query absent from the run (seed 004 §4.4.1-4.4.2 average over ALL questions with
ground truth, so a retrieval outage lowers the metrics instead of the sample count).
Skipped with a reason (by `metric.outcomes`): samples without ground truth, without any
relevant judged document, or whose retrieved contexts all lack an id and a url (retrieval
happened but cannot be judged). Keys are compared after `keys.normalize_key` on both
sides. Grades <= 0 never count: a document is relevant when its grade >= the relevance
threshold (>= 1), and NDCG gains are max(grade, 0), as in trec_eval (whose `-l` level
changes relevance but not the NDCG gains).

The registry calls each metric (`hit_rate@1`, `ndcg@10`, ...) separately on the same
batch, so the last batch's `Judgments` is cached, keyed on the identity of its samples
(samples are frozen; the cached value holds them, so an identity cannot be reused by a
new object while it is cached).
"""

from __future__ import annotations

import math
import sys
import threading
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress, count, repeat
from operator import attrgetter, is_

import numpy as np
from numpy.typing import NDArray

from evaluators.outcome import Skipped
from evaluators.retrieval.keys import normalize_key
from evaluators.sample import Context, Sample

NO_GROUND_TRUTH = Skipped("no ground truth")
NO_RELEVANT = Skipped("no relevant documents")
NO_KEYED_CONTEXTS = Skipped("no retrieved contexts with id or url")

_context_id = attrgetter("id")


@dataclass(frozen=True)
class Judgments:
    """Arrays for the rows of a batch; `row_of[j]` is sample j's row or -1 (skipped).

    `gains` covers the first `gains.shape[1]` ranks only (at most the `depth` asked of
    `build`); `first_relevant_rank` looks past them when a whole list is needed.
    """

    gains: NDArray[np.float64]
    ideal: NDArray[np.float64]
    row_of: NDArray[np.int64]
    skip_of: tuple[Skipped | None, ...]
    depth: int
    samples: tuple[Sample, ...]
    sample_of_row: tuple[int, ...]
    _first: dict[int, NDArray[np.float64]] = field(default_factory=dict, compare=False)

    def n_relevant(self, threshold: int) -> NDArray[np.int64]:
        """Per row: judged documents with grade >= threshold."""
        counts: NDArray[np.int64] = (self.ideal >= threshold).sum(axis=1)
        return counts

    def covers(self, depth: int) -> bool:
        return self.depth >= depth

    def first_relevant_rank(self, threshold: int) -> NDArray[np.float64]:
        """Per row: the 1-based rank of the first relevant document in the WHOLE list, or
        inf. Ranks past `gains` are read (in Python) only for rows that need them."""
        cached = self._first.get(threshold)
        if cached is not None:
            return cached
        relevant = self.gains >= threshold
        if relevant.shape[1] == 0:  # every row retrieved nothing
            first = np.full(relevant.shape[0], np.inf)
        else:
            first = np.where(relevant.any(axis=1), relevant.argmax(axis=1) + 1.0, np.inf)
        width = self.gains.shape[1]
        for row in np.flatnonzero(np.isinf(first)).tolist():
            sample = self.samples[self.sample_of_row[row]]
            if len(sample.contexts) > width:
                first[row] = _scan_tail(sample, width, threshold)
        self._first[threshold] = first
        return first


def _scan_tail(sample: Sample, start: int, threshold: int) -> float:
    """1-based rank of the first relevant context at or after index `start`, or inf."""
    tail = sample.contexts[start:]
    relevance = sample.relevance or {}
    if "://" not in "\x00".join(relevance):
        # Plain ids: let C walk the ids and stop at the first relevant one, or at the
        # first context without an id (whose url needs the general path below).
        stop: dict[str | None, bool] = {k: True for k, g in relevance.items() if g >= threshold}
        stop[None] = True
        rank = next(compress(count(start + 1), map(stop.__contains__, map(_context_id, tail))), 0)
        if rank == 0:
            return math.inf
        if sample.contexts[rank - 1].id is not None:
            return float(rank)
        start, tail = rank - 1, sample.contexts[rank - 1 :]
    index_of, grades, _ = _truth_index(relevance)
    for rank, key in enumerate(_retrieved_keys(tail), start + 1):
        at = None if key is None else index_of.get(key)
        if at is not None and grades[at] >= threshold:
            return float(rank)
    return math.inf


def _truth_index(relevance: Mapping[str, int]) -> tuple[dict[str | None, int], list[int], bool]:
    """Judgments as (normalized key -> position in grades, grades, any url key).

    Grades <= 0 may be kept (they add nothing: gains and the ideal are clipped at 0).
    """
    if "://" not in "\x00".join(relevance):
        return dict(zip(relevance, count())), list(relevance.values()), False
    index_of: dict[str | None, int] = {}
    grades: list[int] = []
    for key, grade in relevance.items():
        norm = normalize_key(key)
        at = index_of.get(norm)
        if at is None:
            index_of[norm] = len(grades)
            grades.append(grade)
        elif grade > grades[at]:
            grades[at] = grade
    return index_of, grades, True


def _retrieved_keys(contexts: Sequence[Context]) -> list[str | None]:
    return [
        None if (k := c.key) is None else normalize_key(k) if "://" in k else k for c in contexts
    ]


_NO_ID = -2  # marks a context without an id on the fast path (its url must be used)


def build(samples: Sequence[Sample], depth: int | None = None) -> Judgments:
    """Join every sample's ranked contexts with its ground truth (see module docstring).

    Only the first `depth` ranks (all when None) enter `gains`: cutoff metrics never look
    further, and reading contexts is most of the cost.

    The per-context work is one C-level pass per sample (`map` of the ids through the
    sample's key -> judgment-index dict); matching, de-duplication and the scatter into
    the matrix are vectorized over the whole batch.
    """
    n = len(samples)
    limit = sys.maxsize if depth is None else depth
    row_of = np.full(n, -1, dtype=np.int64)
    skip_of: list[Skipped | None] = [None] * n
    found = array("q")  # per retrieved context: index of its judgment in its row, or < 0
    lengths: list[int] = []
    grades_flat: list[int] = []
    n_judged: list[int] = []
    redo: dict[int, int] = {}  # row -> sample, for rows that need the keys path
    sample_of_row: list[int] = []
    for j, sample in enumerate(samples):
        relevance = sample.relevance
        if relevance is None:
            skip_of[j] = NO_GROUND_TRUTH
            continue
        contexts = sample.contexts
        index_of, grades, has_urls = _truth_index(relevance)
        row = len(lengths)
        sample_of_row.append(j)
        if len(contexts) > limit:
            contexts = contexts[:limit]
        if has_urls:
            redo[row] = j
            found.extend(repeat(-1, len(contexts)))
        else:
            # No truth key is a url, so ids need no normalization: a normalized url still
            # contains "://" and could not match anyway. A missing id is marked _NO_ID.
            index_of[None] = _NO_ID
            found.extend(map(index_of.get, map(_context_id, contexts), repeat(-1)))
        lengths.append(len(contexts))
        grades_flat.extend(grades)
        n_judged.append(len(grades))
    rows = len(lengths)
    row_of[np.asarray(sample_of_row, dtype=np.int64)] = np.arange(rows)
    length = np.asarray(lengths, dtype=np.int64)
    starts = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(length, out=starts[1:])
    where = np.frombuffer(found, dtype=np.int64).copy() if found else np.zeros(0, np.int64)
    missing_id = np.flatnonzero(where == _NO_ID)
    if len(missing_id):
        incomplete = np.unique(np.searchsorted(starts, missing_id, side="right") - 1)
        redo.update((r, sample_of_row[r]) for r in incomplete.tolist())
    for row, j in redo.items():
        index_of, _, _ = _truth_index(samples[j].relevance or {})
        keys = _retrieved_keys(samples[j].contexts)
        if keys and all(k is None for k in keys):
            skip_of[j] = NO_KEYED_CONTEXTS
            row_of[j] = -1
        where[starts[row] : starts[row + 1]] = [
            -1 if k is None else index_of.get(k, -1) for k in keys[:limit]
        ]
    gains = _scatter_gains(where, length, starts, grades_flat, n_judged)
    ideal = _ideal_rows(grades_flat, n_judged)
    return Judgments(
        gains=gains,
        ideal=ideal,
        row_of=row_of,
        skip_of=tuple(skip_of),
        depth=limit,
        samples=tuple(samples),
        sample_of_row=tuple(sample_of_row),
    )


def _scatter_gains(
    where: NDArray[np.int64],
    length: NDArray[np.int64],
    starts: NDArray[np.int64],
    grades_flat: list[int],
    n_judged: list[int],
) -> NDArray[np.float64]:
    rows = len(length)
    gains = np.zeros((rows, int(length.max(initial=0))), dtype=np.float64)
    hits = np.flatnonzero(where >= 0)
    row = np.searchsorted(starts, hits, side="right") - 1
    judgment = where[hits]
    width = max(n_judged, default=0) + 1
    pair = row * width + judgment
    first = np.unique(pair, return_index=True)[1]
    if len(first) != len(pair):
        # A document retrieved twice counts once, at its best (first) rank.
        hits, row, judgment = hits[first], row[first], judgment[first]
    judged_starts = np.zeros(rows, dtype=np.int64)
    if rows:
        np.cumsum(np.asarray(n_judged[:-1], dtype=np.int64), out=judged_starts[1:])
    grades = np.maximum(np.asarray(grades_flat, dtype=np.float64), 0.0)
    gains[row, hits - starts[row]] = grades[judged_starts[row] + judgment]
    return gains


def _ideal_rows(grades_flat: list[int], counts: list[int]) -> NDArray[np.float64]:
    """Each row's judged grades (clipped at 0) sorted descending, zero-padded."""
    size = np.asarray(counts, dtype=np.int64)
    grades = np.maximum(np.asarray(grades_flat, dtype=np.float64), 0.0)
    row = np.repeat(np.arange(len(size)), size)
    matrix = np.zeros((len(size), int(size.max(initial=0))), dtype=np.float64)
    matrix[np.arange(matrix.shape[1]) < size[:, None]] = grades[np.lexsort((-grades, row))]
    return matrix


_cache_lock = threading.Lock()
_cache: Judgments | None = None


def depth_for(k: int | None) -> int:
    """The depth built for cutoff k: a power of two >= max(k, 16), so that the usual
    cutoffs of one evaluation (1, 3, 5, 10, ...) share one build."""
    need = max(k or 1, 16)
    return 1 << (need - 1).bit_length()


def judge(samples: Sequence[Sample], depth: int | None = None) -> Judgments:
    """`build(samples, depth_for(depth))`, reusing the previous result when it was built
    for the same samples (by identity) and deep enough."""
    global _cache
    with _cache_lock:
        cached = _cache
    if (
        cached is not None
        and cached.covers(depth or 1)
        and len(cached.samples) == len(samples)
        and all(map(is_, cached.samples, samples))
    ):
        return cached
    judgments = build(samples, depth_for(depth))
    with _cache_lock:
        _cache = judgments
    return judgments


def clear_cache() -> None:
    """Drop the cached batch (and the references it holds to its samples)."""
    global _cache
    with _cache_lock:
        _cache = None
