"""Tier 0: how well the embedding model separates questions about different documents.

Pure functions over (embeddings, labels) arrays (seed 004, §3.4):

- intra_cluster_similarity = mean over clusters C (|C| >= 2) of
      2 / (|C|(|C|-1)) · Σ_{p<q in C} cos(e_p, e_q)
- inter_cluster_distance = 2 / (m(m-1)) · Σ_{i<j} ||μ_i - μ_j||₂   (μ = cluster centroid)
- silhouette = mean_i (b(i) - a(i)) / max(a(i), b(i)),  a(i) = mean distance to the other
  members of i's cluster, b(i) = smallest mean distance to another cluster's members,
  s(i) = 0 for singletons (Rousseeuw 1987; equals `sklearn.metrics.silhouette_score`).
  Distance: cosine (1 - cos, the default) or euclidean. Computed in float64, in row
  blocks, never as an n×n matrix.

As registered dataset metrics the texts are the questions and a question's cluster is its
ground-truth document (the key with the highest grade); samples without ground truth are
left out. `total_pairs` counts the (question, document) pairs used, `n_clusters` the
distinct documents.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Literal

import numpy as np

from evaluators.aggregate import bootstrap_ci
from evaluators.outcome import Outcome, Skipped
from evaluators.registry import DatasetValue, EvalContext, MetricSpec, register
from evaluators.sample import Sample

Distance = Literal["cosine", "euclidean"]
_BLOCK_ELEMENTS = 4_000_000  # float64 distances held at once (32 MB)


class UndefinedMetricError(ValueError):
    """The metric has no value for these inputs (too few clusters or members)."""


def _codes(labels: Sequence[object] | np.ndarray) -> tuple[np.ndarray, int]:
    _, codes = np.unique(np.asarray(labels), return_inverse=True)
    codes = codes.reshape(-1)
    return codes, int(codes.max()) + 1 if codes.size else 0


def _unit_rows(x: np.ndarray) -> np.ndarray:
    norms = np.sqrt(np.einsum("ij,ij->i", x, x))
    unit: np.ndarray = np.divide(x, norms[:, None], out=np.zeros_like(x), where=norms[:, None] > 0)
    return unit


def _check(embeddings: np.ndarray, labels: Sequence[object] | np.ndarray) -> np.ndarray:
    x = np.asarray(embeddings, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError("embeddings must be a 2-D array (samples × dimensions)")
    if len(labels) != x.shape[0]:
        raise ValueError(f"{x.shape[0]} embeddings but {len(labels)} labels")
    return x


def intra_cluster_similarity(
    embeddings: np.ndarray, labels: Sequence[object] | np.ndarray
) -> np.ndarray:
    """Mean pairwise cosine similarity inside each cluster with >= 2 members (one per cluster).

    Uses Σ_{p<q} u_p·u_q = (|Σ u|² - Σ |u|²) / 2 over unit rows u, so it is linear in n.
    """
    x = _unit_rows(_check(embeddings, labels))
    codes, k = _codes(labels)
    sums = np.zeros((k, x.shape[1]))
    np.add.at(sums, codes, x)
    sizes = np.bincount(codes, minlength=k)
    sq_norms = np.bincount(codes, weights=np.einsum("ij,ij->i", x, x), minlength=k)
    keep = sizes >= 2
    if not keep.any():
        raise UndefinedMetricError("no cluster has two or more members")
    pair_sums = (np.einsum("ij,ij->i", sums, sums) - sq_norms)[keep] / 2.0
    pairs = sizes[keep] * (sizes[keep] - 1) / 2.0
    # a cluster of identical texts is 1 up to rounding, which the subtraction can push over
    return np.asarray(np.clip(pair_sums / pairs, -1.0, 1.0))


def inter_cluster_distance(embeddings: np.ndarray, labels: Sequence[object] | np.ndarray) -> float:
    """Mean euclidean distance between the centroids of every pair of clusters.

    Uses |a - b|² = |a|² + |b|² - 2 a·b, so the k x k distances come from one matrix
    product per block of rows (BLAS) instead of a k x k x d difference tensor; the square is
    clipped at 0 against rounding, which costs ~1e-8 absolute on distances near zero.
    """
    x = _check(embeddings, labels)
    codes, k = _codes(labels)
    if k < 2:
        raise UndefinedMetricError("fewer than two clusters")
    centroids = np.zeros((k, x.shape[1]))
    np.add.at(centroids, codes, x)
    centroids /= np.bincount(codes, minlength=k)[:, None]
    sq = np.einsum("ij,ij->i", centroids, centroids)
    total = 0.0
    block = max(1, _BLOCK_ELEMENTS // k)
    for start in range(0, k, block):
        stop = min(k, start + block)
        d2 = sq[start:stop, None] + sq[None, :] - 2.0 * (centroids[start:stop] @ centroids.T)
        np.maximum(d2, 0.0, out=d2)
        upper = np.arange(start, stop)[:, None] < np.arange(k)[None, :]
        total += float(np.sqrt(d2[upper]).sum())
    return total / (k * (k - 1) / 2.0)


def silhouette_samples(
    embeddings: np.ndarray,
    labels: Sequence[object] | np.ndarray,
    metric: Distance = "cosine",
) -> np.ndarray:
    """The silhouette s(i) of every sample, in the input order (sklearn's definition)."""
    x = _check(embeddings, labels)
    codes, k = _codes(labels)
    n = x.shape[0]
    if not 2 <= k <= n - 1:
        raise UndefinedMetricError(
            f"the silhouette needs 2..n-1 clusters; got {k} clusters for {n} samples"
        )
    if metric == "cosine":
        x = _unit_rows(x)
    elif metric != "euclidean":
        raise ValueError(f"unknown distance {metric!r}; use 'cosine' or 'euclidean'")
    order = np.argsort(codes, kind="stable")
    xs, cs = x[order], codes[order]
    sizes = np.bincount(cs, minlength=k).astype(np.float64)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    sq = np.einsum("ij,ij->i", xs, xs)
    out = np.empty(n)
    block = max(1, _BLOCK_ELEMENTS // n)
    for b in range(0, n, block):
        rows = xs[b : b + block]
        r = np.arange(rows.shape[0])
        dist = rows @ xs.T
        if metric == "cosine":
            dist *= -1.0
            dist += 1.0
            np.clip(dist, 0.0, 2.0, out=dist)
        else:
            # Same operation order as sklearn's euclidean_distances, so ties and
            # duplicates round alike.
            dist *= -2.0
            dist += sq[b : b + block, None]
            dist += sq[None, :]
            np.maximum(dist, 0.0, out=dist)
            dist[r, b + r] = 0.0
            np.sqrt(dist, out=dist)
        sums = np.add.reduceat(dist, starts, axis=1)
        own = cs[b : b + block]
        own_size = sizes[own]
        with np.errstate(divide="ignore", invalid="ignore"):
            a = np.where(own_size > 1, sums[r, own] / (own_size - 1), 0.0)
            means = sums / sizes[None, :]
            means[r, own] = np.inf
            bb = means.min(axis=1)
            denom = np.maximum(a, bb)
            s = np.where((own_size > 1) & (denom > 0), (bb - a) / denom, 0.0)
        out[order[b : b + block]] = s
    return out


def silhouette(
    embeddings: np.ndarray,
    labels: Sequence[object] | np.ndarray,
    metric: Distance = "cosine",
) -> float:
    """Mean silhouette over all samples (equals sklearn's `silhouette_score`)."""
    return float(silhouette_samples(embeddings, labels, metric).mean())


# --- registered dataset metrics -------------------------------------------------------

NO_GROUND_TRUTH = "no ground truth"
NO_EMBEDDER = "no embedder configured"


def ground_truth_document(sample: Sample) -> str | None:
    """The sample's most relevant document key (highest grade, first listed on ties)."""
    if not sample.relevance:
        return None
    best: str | None = None
    best_grade = 0
    for key, grade in sample.relevance.items():
        if grade > best_grade:
            best, best_grade = key, grade
    return best


def _labelled(samples: Sequence[Sample]) -> tuple[list[Sample], list[str], dict[str, int]]:
    kept: list[Sample] = []
    labels: list[str] = []
    skipped: Counter[str] = Counter()
    for s in samples:
        doc = ground_truth_document(s)
        if doc is None:
            skipped[NO_GROUND_TRUTH] += 1
        else:
            kept.append(s)
            labels.append(doc)
    return kept, labels, dict(skipped)


def _clusters_or_skip(
    samples: Sequence[Sample], ctx: EvalContext
) -> tuple[np.ndarray, list[str], dict[str, int]] | Skipped:
    kept, labels, skipped = _labelled(samples)
    if len(set(labels)) < 2:
        return Skipped(
            f"fewer than 2 clusters (ground-truth documents): {len(set(labels))} "
            f"among {len(kept)} samples with ground truth"
        )
    if ctx.embedder is None:
        return Skipped(NO_EMBEDDER)
    return ctx.embedder.encode([s.question for s in kept]), labels, skipped


def _intra(samples: Sequence[Sample], ctx: EvalContext, k: int | None) -> DatasetValue | Outcome:
    got = _clusters_or_skip(samples, ctx)
    if isinstance(got, Skipped):
        return got
    emb, labels, skipped = got
    try:
        per_cluster = intra_cluster_similarity(emb, labels)
    except UndefinedMetricError as exc:
        return Skipped(str(exc))
    lo, hi = bootstrap_ci(per_cluster, ctx.seed)
    return DatasetValue(float(per_cluster.mean()), len(labels), lo, hi, skipped)


def _inter(samples: Sequence[Sample], ctx: EvalContext, k: int | None) -> DatasetValue | Outcome:
    got = _clusters_or_skip(samples, ctx)
    if isinstance(got, Skipped):
        return got
    emb, labels, skipped = got
    return DatasetValue(inter_cluster_distance(emb, labels), len(labels), skip_reasons=skipped)


def _silhouette(
    samples: Sequence[Sample], ctx: EvalContext, k: int | None
) -> DatasetValue | Outcome:
    got = _clusters_or_skip(samples, ctx)
    if isinstance(got, Skipped):
        return got
    emb, labels, skipped = got
    metric = ctx.options.get("silhouette_distance", "cosine")
    try:
        values = silhouette_samples(emb, labels, metric)
    except UndefinedMetricError as exc:
        return Skipped(str(exc))
    lo, hi = bootstrap_ci(values, ctx.seed)
    return DatasetValue(float(values.mean()), len(labels), lo, hi, skipped)


def _n_clusters(
    samples: Sequence[Sample], ctx: EvalContext, k: int | None
) -> DatasetValue | Outcome:
    kept, labels, skipped = _labelled(samples)
    if not kept:
        return Skipped(NO_GROUND_TRUTH)
    return DatasetValue(float(len(set(labels))), len(kept), skip_reasons=skipped)


def _total_pairs(
    samples: Sequence[Sample], ctx: EvalContext, k: int | None
) -> DatasetValue | Outcome:
    kept, _, skipped = _labelled(samples)
    if not kept:
        return Skipped(NO_GROUND_TRUTH)
    return DatasetValue(float(len(kept)), len(kept), skip_reasons=skipped)


_NEEDS = "questions + ground truth (relevant_ids/relevance)"
for _family, _fn, _desc, _emb, _direction, _unit in (
    (
        "intra_cluster_similarity",
        _intra,
        "Mean cosine similarity of questions about the same "
        "ground-truth document (per cluster, averaged over clusters).",
        True,
        "higher",
        "cosine",
    ),
    (
        "inter_cluster_distance",
        _inter,
        "Mean euclidean distance between the centroids of "
        "question clusters (one cluster per ground-truth document).",
        True,
        "higher",
        "distance",
    ),
    (
        "silhouette",
        _silhouette,
        "Silhouette coefficient of questions clustered by "
        "ground-truth document (cosine distance; option silhouette_distance).",
        True,
        "higher",
        "cosine",
    ),
    (
        "n_clusters",
        _n_clusters,
        "Number of distinct ground-truth documents (clusters).",
        False,
        "none",
        "count",
    ),
    (
        "total_pairs",
        _total_pairs,
        "Number of (question, ground-truth document) pairs.",
        False,
        "none",
        "count",
    ),
):
    register(
        MetricSpec(
            family=_family,
            kind="dataset",
            compute=_fn,
            needs=_NEEDS,
            description=_desc,
            uses_embedder=_emb,
            direction=_direction,  # type: ignore[arg-type]
            unit=_unit,  # type: ignore[arg-type]
            # inter_cluster_distance and the counts are single values without an interval
            interval=_family in ("intra_cluster_similarity", "silhouette"),
        )
    )
