"""The space topics are found in: sentence embeddings joined with the embeddings of each
question's lexical neighbours, smoothed over each question's nearest neighbours.

Three steps, each measured (benchmarks/topics.py; Banking77 test, Ward at the true k):

- the L2-normalised sentence embeddings carry the meaning, across languages
  (NMI 0.722 / ARI 0.38);
- the wording: TF-IDF over character 2-4-grams (inside word boundaries) sees Russian
  inflections of one stem, typos and code-switched words ("refund") as shared wording. Its
  rows (reduced by truncated SVD) find each question's `lexical_neighbours` most similar
  questions, and the mean embedding of the question and those neighbours is joined to the
  embedding with weight `text_weight`. Joining the TF-IDF rows themselves helps as much on
  one language (Banking77 0.744) but no character n-gram is shared by a Russian question and
  its English twin, so it splits languages (twins in one topic: 95% -> 56% on the RU/EN
  set); the neighbours' mean embedding is comparable across languages (twins 94%);
- each row is then moved halfway towards the mean of its `neighbours` nearest rows (cosine),
  twice: x <- normalise((1 - a) x + a mean(x, kNN(x))). Questions of one intent pull each
  other together and the clusters a linkage finds get tighter (0.772 / 0.46).

The joined, smoothed rows serve the clustering only; topic centroids and the assignment of
new questions use the embeddings alone (`evaluators.topics.assign`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

_BLOCK = 1024


@dataclass(frozen=True)
class SpaceOptions:
    """How the clustering space is built (the defaults are the benchmark's best)."""

    text_weight: float = 0.7
    text_dims: int = 128
    lexical_neighbours: int = 10
    neighbours: int = 10
    rounds: int = 2
    pull: float = 0.5

    def __post_init__(self) -> None:
        if self.text_weight < 0:
            raise ValueError("text_weight must be >= 0")
        if min(self.text_dims, self.neighbours, self.lexical_neighbours) < 1:
            raise ValueError("text_dims, neighbours and lexical_neighbours must be >= 1")
        if self.rounds < 0:
            raise ValueError("rounds must be >= 0")
        if not 0.0 <= self.pull <= 1.0:
            raise ValueError("pull must be in [0, 1]")


def normalise_rows(rows: np.ndarray) -> np.ndarray:
    """`rows` as float32 with unit L2 norm (all-zero rows stay zero)."""
    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    out: np.ndarray = np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
    return out


def text_features(texts: Sequence[str], dims: int, seed: int) -> np.ndarray | None:
    """Character 2-4-gram TF-IDF of `texts` reduced to at most `dims` unit-norm dimensions;
    None when the texts have too little wording to build it from (fewer than 3 texts or
    n-grams)."""
    if len(texts) < 3:
        return None
    # scikit-learn loads where topics are made, not in every process importing the jobs
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(
        analyzer="char_wb", ngram_range=(2, 4), sublinear_tf=True, lowercase=True, min_df=2
    )
    try:
        sparse = vectorizer.fit_transform([t or " " for t in texts])
    except ValueError:  # an empty vocabulary: no n-gram occurs twice
        return None
    width = min(dims, sparse.shape[1] - 1, len(texts) - 1)
    if width < 1:
        return None
    svd = TruncatedSVD(n_components=width, random_state=seed)
    return normalise_rows(svd.fit_transform(sparse))


def nearest_neighbours(rows: np.ndarray, count: int) -> np.ndarray:
    """Indices (n, count) of each unit row's `count` most cosine-similar other rows, computed
    in blocks so memory stays O(block x n)."""
    n = len(rows)
    count = min(count, n - 1)
    out = np.empty((n, max(count, 0)), dtype=np.int64)
    if count <= 0:
        return out
    for start in range(0, n, _BLOCK):
        block = rows[start : start + _BLOCK] @ rows.T
        block[np.arange(len(block)), np.arange(start, start + len(block))] = -np.inf
        out[start : start + len(block)] = np.argpartition(-block, count - 1, axis=1)[:, :count]
    return out


def neighbour_mean(rows: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Unit-norm mean of each row and its neighbours' rows (`index`: (n, m) row indices)."""
    if index.shape[1] == 0:
        return normalise_rows(rows)
    return normalise_rows(np.concatenate([rows[:, None, :], rows[index]], axis=1).mean(axis=1))


def smooth(rows: np.ndarray, options: SpaceOptions) -> np.ndarray:
    """Move each unit row towards the mean of its nearest neighbours (`options.rounds` times)."""
    rows = normalise_rows(rows)
    for _ in range(options.rounds):
        if len(rows) < 3:
            break
        centre = neighbour_mean(rows, nearest_neighbours(rows, options.neighbours))
        rows = normalise_rows((1.0 - options.pull) * rows + options.pull * centre)
    return rows


def clustering_space(
    embeddings: np.ndarray, texts: Sequence[str], options: SpaceOptions, seed: int
) -> np.ndarray:
    """The rows the clustering runs on: normalised embeddings joined with the weighted mean
    embedding of their lexical neighbours, then smoothed over neighbours."""
    rows = normalise_rows(embeddings)
    if options.text_weight > 0:
        features = text_features(texts, options.text_dims, seed)
        if features is not None:
            lexical = neighbour_mean(rows, nearest_neighbours(features, options.lexical_neighbours))
            rows = normalise_rows(np.hstack([rows, options.text_weight * lexical]))
    return smooth(rows, options)
