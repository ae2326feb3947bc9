"""Tier 0 metrics: silhouette pinned to scikit-learn, intra/inter against brute force."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from sklearn.metrics import silhouette_score

from evaluators import embedding_quality as eq
from evaluators.embedder import Embedder
from evaluators.outcome import Skipped
from evaluators.registry import DatasetValue, EvalContext
from evaluators.runner import evaluate
from evaluators.sample import Sample
from tests.fixtures.embedder import VectorEmbedder


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
@pytest.mark.parametrize(
    ("n", "k", "dim", "seed"), [(12, 3, 4, 0), (300, 7, 16, 1), (2500, 40, 8, 2)]
)
def test_silhouette_equals_sklearn(metric: str, n: int, k: int, dim: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, dim))
    labels = rng.integers(0, k, size=n)
    labels[0] = 10_000  # a singleton cluster: s = 0
    ours = eq.silhouette(x, labels, metric)  # type: ignore[arg-type]
    assert abs(ours - silhouette_score(x, labels, metric=metric)) <= 1e-9


def test_silhouette_on_string_labels_and_duplicate_points() -> None:
    x = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [0.6, 0.8]])
    labels = ["a", "a", "b", "b", "b"]
    for metric in ("cosine", "euclidean"):
        ref = silhouette_score(x, labels, metric=metric)
        assert abs(eq.silhouette(x, labels, metric) - ref) <= 1e-9


def test_silhouette_on_real_embeddings(embedder: Embedder) -> None:
    texts = [
        "Как оформить отпуск?",
        "Где подать заявление на отпуск?",
        "Сколько дней отпуска?",
        "How do I reset my password?",
        "I forgot my password",
        "Password reset link",
        "Какая погода завтра?",
        "Будет ли дождь?",
    ]
    labels = ["vacation"] * 3 + ["password"] * 3 + ["weather"] * 2
    emb = embedder.encode(texts).astype(np.float64)
    assert abs(eq.silhouette(emb, labels) - silhouette_score(emb, labels, metric="cosine")) <= 1e-9


def test_silhouette_needs_two_to_n_minus_one_clusters() -> None:
    with pytest.raises(eq.UndefinedMetricError):
        eq.silhouette(np.eye(3), [0, 0, 0])
    with pytest.raises(eq.UndefinedMetricError):
        eq.silhouette(np.eye(3), [0, 1, 2])


def test_intra_and_inter_match_brute_force() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(15, 5))
    labels = [0, 0, 0, 1, 1, 2, 2, 2, 2, 3, 4, 4, 4, 4, 4]
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    per_cluster = []
    centroids = []
    for c in sorted(set(labels)):
        idx = [i for i, lab in enumerate(labels) if lab == c]
        centroids.append(x[idx].mean(axis=0))
        if len(idx) > 1:
            per_cluster.append(np.mean([unit[p] @ unit[q] for p, q in combinations(idx, 2)]))
    np.testing.assert_allclose(eq.intra_cluster_similarity(x, labels), per_cluster, atol=1e-12)
    brute = np.mean([np.linalg.norm(a - b) for a, b in combinations(centroids, 2)])
    assert eq.inter_cluster_distance(x, labels) == pytest.approx(brute, abs=1e-12)


def test_hand_values() -> None:
    # Two orthogonal clusters of identical unit vectors: intra = 1, centroid distance = √2.
    x = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    assert eq.intra_cluster_similarity(x, [0, 0, 1, 1]).tolist() == [1.0, 1.0]
    assert eq.inter_cluster_distance(x, [0, 0, 1, 1]) == pytest.approx(np.sqrt(2))
    assert eq.silhouette(x, [0, 0, 1, 1]) == pytest.approx(1.0)


def _sample(i: int, question: str, doc: str | None) -> Sample:
    relevance = {doc: 1} if doc else None
    return Sample(f"t{i}", question, relevance=relevance)


def test_registered_metrics_cluster_questions_by_ground_truth_document() -> None:
    vectors = {"q1": [1, 0], "q2": [1, 0.1], "q3": [0, 1], "q4": [0.1, 1], "q5": [1, 1]}
    samples = [
        _sample(1, "q1", "docA"),
        _sample(2, "q2", "docA"),
        _sample(3, "q3", "docB"),
        _sample(4, "q4", "docB"),
        _sample(5, "q5", None),
    ]
    fake = VectorEmbedder(vectors)
    names = [
        "silhouette",
        "intra_cluster_similarity",
        "inter_cluster_distance",
        "n_clusters",
        "total_pairs",
    ]
    result = evaluate(samples, names, EvalContext(embedder=fake))
    agg = result.aggregates
    assert fake.encoded == 4  # three embedding metrics, each question encoded once
    x = fake.encode(["q1", "q2", "q3", "q4"]).astype(np.float64)
    labels = ["docA", "docA", "docB", "docB"]
    assert agg["silhouette"].value == pytest.approx(silhouette_score(x, labels, metric="cosine"))
    assert agg["n_clusters"].value == 2 and agg["total_pairs"].value == 4
    assert agg["silhouette"].n == 4
    assert dict(agg["silhouette"].skip_reasons) == {"no ground truth": 1}
    assert agg["intra_cluster_similarity"].value == pytest.approx(float(x[0] @ x[1]))
    assert agg["silhouette"].signature.embedding_model == "test-vectors"


def test_highest_grade_document_is_the_cluster() -> None:
    s = Sample("t", "q", relevance={"a": 1, "b": 3, "c": 3})
    assert eq.ground_truth_document(s) == "b"
    assert eq.ground_truth_document(Sample("t", "q", relevance={"a": 0})) is None


def test_fewer_than_two_clusters_is_skipped_with_a_reason() -> None:
    samples = [_sample(1, "q1", "docA"), _sample(2, "q2", "docA")]
    ctx = EvalContext(embedder=VectorEmbedder({"q1": [1, 0], "q2": [0, 1]}))
    out = eq._silhouette(samples, ctx, None)
    assert isinstance(out, Skipped) and "fewer than 2 clusters" in out.reason
    n = eq._n_clusters(samples, ctx, None)
    assert isinstance(n, DatasetValue) and n.value == 1


def test_identical_texts_are_at_most_fully_similar() -> None:
    """(|Σu|² - Σ|u|²) / 2 rounds above 1 for most clusters of identical vectors (seen on
    a small version group live): the value is clipped to the cosine's range."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = np.repeat(rng.normal(size=(1, 384)).astype(np.float32), 5, axis=0)
        value = float(eq.intra_cluster_similarity(x, [0] * 5)[0])
        assert 1.0 - 1e-12 <= value <= 1.0
