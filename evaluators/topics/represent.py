"""The space topics are found in: sentence embeddings joined with character n-grams, smoothed
over each question's nearest neighbours.

Three steps, each measured on Banking77 (benchmarks/topics.py, /work/topics-results.md):

- the L2-normalised sentence embeddings carry the meaning, across languages;
- TF-IDF over character n-grams (2-4, inside word boundaries) carries the shared wording:
  Russian inflections of one stem, typos, code-switched words ("refund"). Its sparse
  matrix is reduced to `text_dims` dimensions by truncated SVD, L2-normalised and joined to
  the embeddings with weight `text_weight` (0.7: Ward at the true k gains ~+0.02 NMI);
- each row is then moved halfway towards the mean of its `neighbours` nearest rows (cosine),
  twice: x <- normalise((1 - a) x + a mean(kNN(x))). Questions of one intent pull each other
  together, a lone paraphrase joins its group, and the clusters a linkage finds get
  tighter (Ward at the true k: NMI 0.744 -> 0.769, ARI 0.41 -> 0.46).

The joined, smoothed rows serve the clustering only; topic centroids and the assignment of
new questions use the embeddings alone (`evaluators.topics.assign`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfVectorizer

_BLOCK = 1024


@dataclass(frozen=True)
class SpaceOptions:
    """How the clustering space is built (the defaults are the benchmark's best)."""

    text_weight: float = 0.7
    text_dims: int = 128
    neighbours: int = 10
    rounds: int = 2
    pull: float = 0.5

    def __post_init__(self) -> None:
        if self.text_weight < 0:
            raise ValueError("text_weight must be >= 0")
        if self.text_dims < 1 or self.neighbours < 1 or self.rounds < 0:
            raise ValueError("text_dims and neighbours must be >= 1, rounds >= 0")
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


def smooth(rows: np.ndarray, options: SpaceOptions) -> np.ndarray:
    """Move each unit row towards the mean of its nearest neighbours (`options.rounds` times)."""
    rows = normalise_rows(rows)
    for _ in range(options.rounds):
        if len(rows) < 3:
            break
        index = nearest_neighbours(rows, options.neighbours)
        centre = np.concatenate([rows[:, None, :], rows[index]], axis=1).mean(axis=1)
        rows = normalise_rows((1.0 - options.pull) * rows + options.pull * centre)
    return rows


def clustering_space(
    embeddings: np.ndarray, texts: Sequence[str], options: SpaceOptions, seed: int
) -> np.ndarray:
    """The rows the clustering runs on: normalised embeddings joined with weighted character
    n-gram features, then smoothed over neighbours."""
    rows = normalise_rows(embeddings)
    if options.text_weight > 0:
        features = text_features(texts, options.text_dims, seed)
        if features is not None:
            rows = normalise_rows(np.hstack([rows, options.text_weight * features]))
    return smooth(rows, options)
