"""Topic discovery: group questions by meaning, choosing the number of topics from the data.

`discover` runs on a bounded sample of the rows (`sample_size`, seeded), in the space of
`evaluators.topics.represent` (embeddings joined with their lexical neighbours' mean, smoothed
over at most `min_size` nearest neighbours):

1. candidate numbers of topics are the numbers of dense groups HDBSCAN finds there with
   `min_cluster_size = min_size` and `min_samples = 3`, under its two cluster selections:
   "leaf" (the finest groups; it splits round, even groups in two) and "excess of mass"
   (the most persistent; it sometimes takes two big parents for the whole set: k = 2 on
   the RU/EN set at min_size 5), capped by `max_topics`;
2. for each candidate k the sample is partitioned by Ward linkage (scipy), which, unlike
   HDBSCAN's own labels, leaves no question as noise and splits the dense groups' borders
   by variance; topics with fewer than `min_size` sampled questions are dissolved into
   their nearest topic (cosine to the centroids in the clustering space);
3. the partition with the higher silhouette (cosine, in the clustering space) is kept;
4. each topic's centroid is the normalised mean of its questions' embeddings, and the rows
   outside the sample get the nearest centroid (`evaluators.topics.assign`).

On Banking77's test split (3,080 questions, 77 intents) this reaches NMI 0.78 / ARI 0.48
with 110 topics chosen by the method, where k-means and Ward on the plain embeddings given
the true k reach 0.70 / 0.36 and 0.72 / 0.38 (benchmarks/topics.py has the run and the
ablations). The sample's distance matrix is O(sample_size^2) memory (200 MB at 5,000).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage

from evaluators.topics.assign import nearest_topic
from evaluators.topics.represent import SpaceOptions, clustering_space, normalise_rows

MIN_SAMPLES = 3


@dataclass(frozen=True)
class Clustering:
    """Topics found in a set of rows.

    `labels[i]` is row i's topic (0..k-1, numbered by size in the sample, largest first;
    -1: none), `centroids[t]` topic t's unit-norm mean embedding, `sizes[t]` its number of
    rows. `sampled` rows were clustered, the others assigned to their nearest centroid;
    `k_chosen` is the number of topics chosen before those under `min_size` were dissolved.
    """

    labels: np.ndarray
    centroids: np.ndarray
    sizes: tuple[int, ...]
    sampled: int
    k_chosen: int
    options: SpaceOptions = field(default_factory=SpaceOptions)

    @property
    def count(self) -> int:
        """The number of topics."""
        return len(self.sizes)


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def _check(embeddings: np.ndarray, texts: Sequence[str], min_size: int, max_topics: int) -> None:
    if embeddings.ndim != 2:
        raise ValueError(f"embeddings must be a 2-d array, got shape {embeddings.shape}")
    if len(texts) != len(embeddings):
        raise ValueError(f"{len(texts)} texts for {len(embeddings)} embeddings")
    if min_size < 2:
        raise ValueError("min_size must be at least 2")
    if max_topics < 1:
        raise ValueError("max_topics must be at least 1")
    if not np.isfinite(embeddings).all():
        raise ValueError("embeddings contain NaN or infinite values")


def euclidean_distances(space: np.ndarray) -> np.ndarray:
    """The (n, n) Euclidean distances of unit rows, sqrt(2 - 2 cos), as float64: computed
    once with one matrix product and shared by both HDBSCAN selections (brute-force
    neighbour search in ~1,000 dimensions is what makes HDBSCAN slow)."""
    rows = np.asarray(space, dtype=np.float64)
    cosine = rows @ rows.T
    distances: np.ndarray = np.sqrt(np.clip(2.0 - 2.0 * cosine, 0.0, None))
    np.fill_diagonal(distances, 0.0)
    return distances


def dense_groups(
    space: np.ndarray,
    min_size: int,
    selection: str = "leaf",
    distances: np.ndarray | None = None,
) -> int:
    """The number of dense groups of at least `min_size` rows HDBSCAN finds in `space` of
    unit rows (`selection`: HDBSCAN's cluster selection, "leaf" or "eom"; `distances`: the
    rows' `euclidean_distances`, computed here when not given)."""
    if len(space) < 2 * min_size:
        return 1 if len(space) >= min_size else 0
    from sklearn.cluster import HDBSCAN  # scikit-learn loads where topics are made

    found = HDBSCAN(
        min_cluster_size=min_size,
        min_samples=min(MIN_SAMPLES, min_size),
        metric="precomputed",
        cluster_selection_method=selection,
        copy=True,
    ).fit_predict(euclidean_distances(space) if distances is None else distances)
    return len(set(found.tolist()) - {-1})


def choose_count(space: np.ndarray, min_size: int, max_topics: int) -> tuple[int, np.ndarray]:
    """The number of topics and the Ward partition of `space` into them: of the counts of
    HDBSCAN's two selections (leaf and excess of mass), the one whose partition has the
    higher silhouette (cosine)."""
    from sklearn.metrics import silhouette_score

    cap = max(1, min(max_topics, len(space) // min_size))
    best: tuple[float, int, np.ndarray] | None = None
    distances = euclidean_distances(space) if len(space) >= 2 * min_size else None
    for selection in ("leaf", "eom"):
        k = max(1, min(dense_groups(space, min_size, selection, distances), cap))
        if best is not None and k == best[1]:
            continue
        labels = dissolve_small(space, ward_partition(space, k), min_size)
        groups = len(np.unique(labels))
        score = -1.0
        if 1 < groups < len(space):
            # cosine distance 1 - cos = d^2 / 2 for unit rows
            score = (
                float(silhouette_score(distances**2 / 2.0, labels, metric="precomputed"))
                if distances is not None
                else float(silhouette_score(space, labels, metric="cosine"))
            )
        if best is None or score > best[0]:
            best = (score, k, labels)
    if best is None:  # pragma: no cover - the loop always runs
        raise RuntimeError("no count was tried")
    return best[1], best[2]


def ward_partition(space: np.ndarray, k: int) -> np.ndarray:
    """Ward linkage of `space` cut into at most `k` clusters: labels 0..k'-1."""
    if k <= 1 or len(space) < 2:
        return np.zeros(len(space), dtype=np.int64)
    tree = linkage(np.asarray(space, dtype=np.float64), method="ward")
    labels = fcluster(tree, t=k, criterion="maxclust")
    return np.unique(labels, return_inverse=True)[1].astype(np.int64)


def dissolve_small(space: np.ndarray, labels: np.ndarray, min_size: int) -> np.ndarray:
    """`labels` with clusters of fewer than `min_size` rows merged into their rows' nearest
    remaining cluster (cosine to the clusters' mean rows); all kept when none is big enough."""
    sizes = np.bincount(labels)
    kept = np.flatnonzero(sizes >= min_size)
    if len(kept) == 0 or len(kept) == len(sizes):
        return labels
    centres = normalise_rows(np.vstack([space[labels == c].mean(axis=0) for c in kept]))
    small = ~np.isin(labels, kept)
    out = labels.copy()
    out[small] = kept[np.argmax(space[small] @ centres.T, axis=1)]
    return out


def topic_centroids(embeddings: np.ndarray, labels: np.ndarray, count: int) -> np.ndarray:
    """Unit-norm mean embedding of each topic 0..count-1 (rows labelled -1 are left out)."""
    rows = normalise_rows(embeddings)
    sums = np.zeros((count, rows.shape[1]), dtype=np.float64)
    mask = labels >= 0
    np.add.at(sums, labels[mask], rows[mask])
    return normalise_rows(sums)


def discover(
    embeddings: np.ndarray,
    texts: Sequence[str],
    *,
    min_size: int = 10,
    max_topics: int = 200,
    seed: int = 0,
    sample_size: int = 5000,
    options: SpaceOptions | None = None,
) -> Clustering:
    """Find topics among `embeddings` (one row per question, `texts` the questions).

    The number of topics is chosen by the method (module docstring); `min_size` is the
    smallest topic worth reporting, in sampled rows; `max_topics` caps the count; `seed`
    draws the sample (when there are more than `sample_size` rows) and seeds the SVD.
    """
    embeddings = np.asarray(embeddings, dtype=np.float32)
    _check(embeddings, texts, min_size, max_topics)
    options = options or SpaceOptions()
    if options.neighbours > min_size:
        # a question's smoothing neighbours come from its own topic only if that has as many
        options = replace(options, neighbours=min_size)
    if sample_size < min_size:
        raise ValueError("sample_size must be at least min_size")
    n = len(embeddings)
    if n == 0:
        empty = np.zeros((0, embeddings.shape[1]), dtype=np.float32)
        return Clustering(_frozen(np.zeros(0, np.int64)), _frozen(empty), (), 0, 0, options)
    rng = np.random.default_rng(seed)
    sample = (
        np.arange(n) if n <= sample_size else np.sort(rng.choice(n, sample_size, replace=False))
    )
    space = clustering_space(embeddings[sample], [texts[i] for i in sample], options, seed)
    groups, local = choose_count(space, min_size, max_topics)
    # topics ordered by size, largest first, numbered 0..k-1
    sizes = np.bincount(local)
    order = np.argsort(-sizes, kind="stable")
    order = order[sizes[order] > 0]
    rank = np.full(len(sizes), -1, dtype=np.int64)
    rank[order] = np.arange(len(order))
    local = rank[local]
    count = len(order)
    centroids = topic_centroids(embeddings[sample], local, count)
    labels = np.empty(n, dtype=np.int64)
    labels[sample] = local
    rest = np.setdiff1d(np.arange(n), sample, assume_unique=True)
    if len(rest):
        labels[rest] = nearest_topic(embeddings[rest], centroids).topics
    sizes_all = tuple(int(s) for s in np.bincount(labels[labels >= 0], minlength=count))
    return Clustering(
        labels=_frozen(labels),
        centroids=_frozen(centroids),
        sizes=sizes_all,
        sampled=len(sample),
        k_chosen=groups,
        options=options,
    )
