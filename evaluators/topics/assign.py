"""Give questions a topic: the nearest topic centroid, or none when every centroid is far.

With unit-norm embeddings E (n x d) and centroids C (k x d), the cosine similarities are
one matrix product E C^T, so assignment costs O(n k d) and runs in blocks of rows (memory
O(block x k)) at ingest speed. A question whose best similarity is below `min_similarity`
(its cosine distance above 1 - min_similarity) gets no topic (-1): an outlier, or a kind
of question that was not there when the topics were found.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evaluators.topics.represent import normalise_rows

NO_TOPIC = -1
_BLOCK = 8192


@dataclass(frozen=True)
class Assignment:
    """`topics[i]`: row i's topic (a row of the centroids, or -1), `similarity[i]`: its
    cosine to that topic's centroid (to the nearest one also when it was too far)."""

    topics: np.ndarray
    similarity: np.ndarray

    @property
    def assigned_share(self) -> float:
        """The share of rows that got a topic (1.0 for no rows)."""
        return float((self.topics >= 0).mean()) if len(self.topics) else 1.0


def nearest_topic(
    embeddings: np.ndarray, centroids: np.ndarray, min_similarity: float | None = None
) -> Assignment:
    """Each row's most cosine-similar centroid; -1 where that similarity is below
    `min_similarity` (None: every row gets its nearest topic)."""
    rows = normalise_rows(np.atleast_2d(embeddings))
    centres = normalise_rows(np.atleast_2d(centroids))
    if len(rows) and rows.shape[1] != centres.shape[1]:
        raise ValueError(
            f"embeddings have {rows.shape[1]} dimensions, centroids {centres.shape[1]}"
        )
    if min_similarity is not None and not -1.0 <= min_similarity <= 1.0:
        raise ValueError("min_similarity must be a cosine in [-1, 1]")
    n = len(rows)
    topics = np.full(n, NO_TOPIC, dtype=np.int64)
    similarity = np.zeros(n, dtype=np.float32)
    if n == 0 or len(centres) == 0:
        return Assignment(topics, similarity)
    for start in range(0, n, _BLOCK):
        sims = rows[start : start + _BLOCK] @ centres.T
        best = np.argmax(sims, axis=1)
        topics[start : start + len(best)] = best
        similarity[start : start + len(best)] = sims[np.arange(len(best)), best]
    if min_similarity is not None:
        topics[similarity < min_similarity] = NO_TOPIC
    return Assignment(topics, similarity)


def similarity_floor(similarity: np.ndarray, labels: np.ndarray, quantile: float = 0.01) -> float:
    """A `min_similarity` from the clustered rows themselves: the `quantile` of the cosines
    of the rows to their own topic's centroid (so ~1% of questions like the clustered ones
    would fall outside every topic); -1.0 (no floor) for no rows."""
    if not 0.0 <= quantile <= 1.0:
        raise ValueError("quantile must be in [0, 1]")
    own = similarity[labels >= 0]
    return float(np.quantile(own, quantile)) if len(own) else -1.0
