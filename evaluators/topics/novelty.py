"""New topics between re-clusterings: a kind of question that was not asked before.

A re-clustering samples the whole look-back (a week), where a question that appeared
yesterday at 3% of the traffic is ~0.4% of the sample: too few for the clustering to give it
a topic of its own, so its questions are absorbed by their nearest topics (measured on the
repository's Russian/English intents: a held-out intent back at 3% of one day was spread over
four topics, none of whose shares moved beyond chance). `novel_topics` looks at the recent
window against the older traffic instead:

1. each recent question's cosine to its nearest topic (`served`); those below the
   `quantile` of it, the questions the topics serve worst, are the residue, where a new kind
   of question gathers with the tails of the steady topics;
2. the residue is clustered (`discover`, at least `min_size` questions a cluster): each
   cluster's centroid is a candidate;
3. every recent and older question goes to its nearest among the topics and the candidates;
   a candidate is new when its recent count is improbably large for the share of the older
   sample it gets: the one-sided binomial test of the recent count against that share
   (smoothed by half a question), below `alpha` divided by the number of candidates
   (Bonferroni), with a share at least `min_ratio` times the older one and at least
   `min_size` recent questions. The badly served tail of a steady topic is as frequent
   before as now and fails the test; a new intent was (almost) absent before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import binomtest

from evaluators.topics.assign import nearest_topic
from evaluators.topics.cluster import discover, topic_centroids

DEFAULT_QUANTILE = 0.2
DEFAULT_ALPHA = 1e-4
DEFAULT_MIN_RATIO = 3.0


@dataclass(frozen=True)
class Novelty:
    """The candidates found in the residue and which of them are new.

    `centroids[j]` is candidate j's; `recent[j]` / `older[j]` the questions of each sample
    nearest to it; `p_values[j]` its test; `new` the indices of the new ones."""

    centroids: np.ndarray
    recent: tuple[int, ...]
    older: tuple[int, ...]
    p_values: tuple[float, ...]
    new: tuple[int, ...]
    residue: int
    """Recent questions in the residue."""

    def new_centroids(self) -> np.ndarray:
        return self.centroids[list(self.new)]


def novel_topics(
    recent: np.ndarray,
    recent_texts: Sequence[str],
    older: np.ndarray,
    centroids: np.ndarray,
    *,
    min_size: int = 10,
    quantile: float = DEFAULT_QUANTILE,
    alpha: float = DEFAULT_ALPHA,
    min_ratio: float = DEFAULT_MIN_RATIO,
    max_topics: int = 20,
    seed: int = 0,
) -> Novelty:
    """Candidates for new topics among `recent` (rows of the recent questions, unit norm)
    not served by the topics' `centroids`, tested against `older` (rows of the questions
    before): module docstring."""
    if not 0.0 < quantile < 1.0:
        raise ValueError("quantile must be in (0, 1)")
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must be in (0, 1)")
    recent = np.asarray(recent, dtype=np.float32)
    older = np.asarray(older, dtype=np.float32)
    dim = recent.shape[1] if recent.ndim == 2 else 0
    nothing = Novelty(np.zeros((0, dim), np.float32), (), (), (), (), 0)
    if len(recent) < 2 * min_size or len(centroids) == 0:
        return nothing
    served = nearest_topic(recent, centroids).similarity
    residue = np.flatnonzero(served < np.quantile(served, quantile))
    if len(residue) < 2 * min_size:
        return Novelty(nothing.centroids, (), (), (), (), len(residue))
    clustering = discover(
        recent[residue],
        [recent_texts[int(i)] for i in residue],
        min_size=min_size,
        max_topics=max_topics,
        seed=seed,
        sample_size=max(len(residue), min_size),
    )
    if clustering.count == 0:
        return Novelty(nothing.centroids, (), (), (), (), len(residue))
    candidates = topic_centroids(recent[residue], clustering.labels, clustering.count)
    every = np.vstack([np.asarray(centroids, dtype=np.float32), candidates])
    first = len(centroids)
    count = len(candidates)
    in_recent = np.bincount(nearest_topic(recent, every).topics, minlength=len(every))[first:]
    in_older = (
        np.bincount(nearest_topic(older, every).topics, minlength=len(every))[first:]
        if len(older)
        else np.zeros(count, dtype=np.int64)
    )
    p_values = []
    new = []
    for j in range(count):
        share = (float(in_older[j]) + 0.5) / (len(older) + 1.0)
        k = int(in_recent[j])
        p = float(binomtest(k, len(recent), share, alternative="greater").pvalue)
        p_values.append(p)
        if k >= min_size and k / len(recent) >= min_ratio * share and p < alpha / count:
            new.append(j)
    return Novelty(
        centroids=candidates,
        recent=tuple(int(x) for x in in_recent),
        older=tuple(int(x) for x in in_older),
        p_values=tuple(p_values),
        new=tuple(new),
        residue=len(residue),
    )
