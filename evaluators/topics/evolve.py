"""Re-clustering anchored on the previous topics, so steady traffic keeps its topic ids.

Two independent clusterings of the same traffic draw different borders between close topics
(on Banking77, Hungarian matching alone keeps ~75% of questions in their topic), so a
re-clustering that starts afresh each time would move a fifth of the series. `recluster`
keeps the previous topics as the starting point instead:

1. a fresh `discover` on the new rows finds the current topics;
2. `match_topics` pairs them with the previous ones; a fresh topic that matches none and
   whose questions the previous topics serve badly (most of them less similar to their
   nearest previous centroid than the `outlier_quantile` of the rows of the matched fresh
   topics are) is a new topic, with a new id. On Banking77 (8 intents held out, then back)
   the quantile trades birth for stability: 0.1 -> 3 of 8 born, 95.4% of steady traffic
   kept; 0.2 -> 4 of 8, 95.4%; 0.3 -> 6 of 8, 94.8%;
3. every row goes to its nearest topic among the previous and the new ones, each centroid
   moves to its rows' mean (one k-means step: the topics follow slow drift), and topics
   left with fewer than `min_size` rows are retired, their rows going to the next nearest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evaluators.topics.assign import nearest_topic
from evaluators.topics.cluster import Clustering, discover, topic_centroids
from evaluators.topics.match import DEFAULT_MIN_SIMILARITY, match_topics
from evaluators.topics.represent import SpaceOptions


@dataclass(frozen=True)
class Topics:
    """Topics with stable ids: `centroids[j]` is topic `ids[j]`'s; `labels[i]` row i's topic
    id (-1: none); `new` and `retired` the ids born and gone in this re-clustering;
    `next_id` the first id never used."""

    ids: tuple[int, ...]
    centroids: np.ndarray
    labels: np.ndarray
    new: tuple[int, ...]
    retired: tuple[int, ...]
    next_id: int


def first_topics(clustering: Clustering) -> Topics:
    """Ids 0..k-1 for a first clustering."""
    ids = tuple(range(clustering.count))
    return Topics(ids, clustering.centroids, clustering.labels, ids, (), clustering.count)


def recluster(
    previous: Topics,
    embeddings: np.ndarray,
    texts: Sequence[str],
    *,
    min_size: int = 10,
    max_topics: int = 200,
    seed: int = 0,
    sample_size: int = 5000,
    min_similarity: float = DEFAULT_MIN_SIMILARITY,
    outlier_quantile: float = 0.2,
    options: SpaceOptions | None = None,
) -> Topics:
    """The topics of `embeddings` (rows of recent questions), keeping `previous`'s ids."""
    embeddings = np.asarray(embeddings, dtype=np.float32)
    if not 0.0 < outlier_quantile < 1.0:
        raise ValueError("outlier_quantile must be in (0, 1)")
    fresh = discover(
        embeddings,
        texts,
        min_size=min_size,
        max_topics=max_topics,
        seed=seed,
        sample_size=sample_size,
        options=options,
    )
    if not previous.ids:
        first = first_topics(fresh)
        shifted = tuple(previous.next_id + i for i in first.ids)
        labels = np.where(fresh.labels >= 0, fresh.labels + previous.next_id, -1)
        labels.setflags(write=False)
        return Topics(shifted, fresh.centroids, labels, shifted, (), previous.next_id + fresh.count)
    match = match_topics(
        previous.centroids,
        previous.ids,
        fresh.centroids,
        next_id=previous.next_id,
        min_similarity=min_similarity,
    )
    served = nearest_topic(embeddings, previous.centroids).similarity
    # how well the previous topics serve the rows of the fresh topics they match: a new
    # kind of question is served worse than that, however large its share of the traffic
    matched = [j for j, topic_id in enumerate(match.ids) if topic_id not in match.new]
    known = served[np.isin(fresh.labels, matched)] if matched else served
    floor = float(np.quantile(known, outlier_quantile)) if len(known) else -1.0
    born = [
        j
        for j, topic_id in enumerate(match.ids)
        if topic_id in match.new and np.mean(served[fresh.labels == j] < floor) > 0.5
    ]
    ids = list(previous.ids) + [previous.next_id + i for i in range(len(born))]
    centroids = np.vstack([previous.centroids, fresh.centroids[born]])
    while True:
        rows = nearest_topic(embeddings, centroids).topics
        sizes = np.bincount(rows, minlength=len(ids))
        small = np.flatnonzero(sizes < min_size)
        if len(small) == 0 or len(small) == len(ids):
            break
        keep = np.setdiff1d(np.arange(len(ids)), small)
        ids = [ids[i] for i in keep]
        centroids = centroids[keep]
    centroids = topic_centroids(embeddings, rows, len(ids))
    labels = np.asarray(ids, dtype=np.int64)[nearest_topic(embeddings, centroids).topics]
    new = tuple(i for i in ids if i >= previous.next_id)
    retired = tuple(i for i in previous.ids if i not in set(ids))
    centroids.setflags(write=False)
    labels.setflags(write=False)
    return Topics(tuple(ids), centroids, labels, new, retired, previous.next_id + len(born))
