"""Stable topic ids across re-clusterings: new clusters inherit the id of the previous topic
they are, one to one, most like.

Each re-clustering numbers its topics afresh; series and tickets need the same id for the
same topic. `match_topics` pairs new and previous centroids by the Hungarian algorithm
(scipy's `linear_sum_assignment`) on their cosine similarity, maximising the total; a pair
below `min_similarity` is no match. Matched clusters keep the previous id, the others get
new ids above every id used before (`next_id`), so an id is never reused for another topic.
`kept_share` measures the result: the share of questions whose topic id is the same under
both clusterings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment

from evaluators.topics.represent import normalise_rows

DEFAULT_MIN_SIMILARITY = 0.8


@dataclass(frozen=True)
class TopicMatch:
    """`ids[j]`: the stable id of new cluster j; `similarity[j]` its cosine to the previous
    topic whose id it took (nan-free: 0.0 for a new topic); `new` the ids given afresh;
    `retired` the previous ids no cluster took; `next_id` the first id not yet used."""

    ids: tuple[int, ...]
    similarity: tuple[float, ...]
    new: tuple[int, ...]
    retired: tuple[int, ...]
    next_id: int


def match_topics(
    previous_centroids: np.ndarray,
    previous_ids: tuple[int, ...] | list[int],
    centroids: np.ndarray,
    *,
    next_id: int | None = None,
    min_similarity: float = DEFAULT_MIN_SIMILARITY,
) -> TopicMatch:
    """Stable ids for the clusters with `centroids`, given the previous topics' centroids
    and ids (`next_id`: the first id never used, default one above the previous ids)."""
    previous = np.atleast_2d(np.asarray(previous_centroids, dtype=np.float32))
    current = np.atleast_2d(np.asarray(centroids, dtype=np.float32))
    previous_ids = tuple(int(i) for i in previous_ids)
    if len(previous_centroids) != len(previous_ids):
        raise ValueError(f"{len(previous_ids)} ids for {len(previous_centroids)} centroids")
    if len(set(previous_ids)) != len(previous_ids):
        raise ValueError("previous ids must be distinct")
    floor = max(previous_ids, default=-1) + 1
    if next_id is None:
        next_id = floor
    elif next_id < floor:
        raise ValueError(f"next_id {next_id} is not above the previous ids (max {floor - 1})")
    count = len(centroids)
    ids = [-1] * count
    sims = [0.0] * count
    taken: set[int] = set()
    if count and len(previous_ids):
        if previous.shape[1] != current.shape[1]:
            raise ValueError("previous and new centroids differ in dimension")
        cosine = normalise_rows(current) @ normalise_rows(previous).T
        rows, cols = linear_sum_assignment(cosine, maximize=True)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            if cosine[r, c] >= min_similarity:
                ids[r] = previous_ids[c]
                sims[r] = float(cosine[r, c])
                taken.add(previous_ids[c])
    new: list[int] = []
    for j in range(count):
        if ids[j] < 0:
            ids[j] = next_id
            new.append(next_id)
            next_id += 1
    retired = tuple(i for i in previous_ids if i not in taken)
    return TopicMatch(tuple(ids), tuple(sims), tuple(new), retired, next_id)


def relabel(labels: np.ndarray, ids: tuple[int, ...]) -> np.ndarray:
    """Per-row cluster indices (-1: none) turned into stable ids (-1 stays -1)."""
    labels = np.asarray(labels, dtype=np.int64)
    table = np.asarray((*ids, -1), dtype=np.int64)
    return table[np.where(labels >= 0, labels, len(ids))]


def kept_share(before: np.ndarray, after: np.ndarray) -> float:
    """The share of rows with the same topic id in `before` and `after` (stable ids; a row
    without a topic in both counts as kept); 1.0 for no rows."""
    before = np.asarray(before)
    after = np.asarray(after)
    if before.shape != after.shape:
        raise ValueError("before and after must label the same rows")
    return float((before == after).mean()) if len(before) else 1.0
