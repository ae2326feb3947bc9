"""Nearest-centroid assignment, and "no topic" beyond a similarity floor."""

from __future__ import annotations

import numpy as np
import pytest

from evaluators.topics import nearest_topic, similarity_floor

CENTROIDS = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)


def test_nearest_centroid_by_cosine() -> None:
    rows = np.array([[2.0, 0.1], [0.2, 3.0], [-1.0, -0.2]], np.float32)
    got = nearest_topic(rows, CENTROIDS)
    assert got.topics.tolist() == [0, 1, 1]  # (-1, -0.2): cos -0.98 to x, -0.20 to y
    assert got.similarity[0] == pytest.approx(2.0 / np.hypot(2.0, 0.1), rel=1e-6)
    assert got.assigned_share == 1.0


def test_far_rows_get_no_topic() -> None:
    rows = np.array([[1.0, 0.05], [-1.0, -1.0]], np.float32)
    got = nearest_topic(rows, CENTROIDS, min_similarity=0.5)
    assert got.topics.tolist() == [0, -1]
    assert got.assigned_share == 0.5


def test_blocks_give_the_same_answer_as_one_product() -> None:
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(20_000, 8)).astype(np.float32)
    centroids = rng.normal(size=(5, 8)).astype(np.float32)
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    expected = np.argmax(unit @ (centroids / np.linalg.norm(centroids, axis=1)[:, None]).T, 1)
    assert np.array_equal(nearest_topic(rows, centroids).topics, expected)


def test_no_rows_or_no_centroids() -> None:
    assert nearest_topic(np.zeros((0, 2), np.float32), CENTROIDS).topics.shape == (0,)
    got = nearest_topic(np.ones((2, 2), np.float32), np.zeros((0, 2), np.float32))
    assert got.topics.tolist() == [-1, -1]


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="dimensions"):
        nearest_topic(np.ones((1, 3), np.float32), CENTROIDS)
    with pytest.raises(ValueError, match="cosine"):
        nearest_topic(np.ones((1, 2), np.float32), CENTROIDS, min_similarity=2.0)


def test_similarity_floor_is_a_quantile_of_the_own_topic_cosines() -> None:
    similarity = np.array([0.9, 0.8, 0.7, 0.6, 0.1], np.float32)
    labels = np.array([0, 0, 1, 1, -1])
    assert similarity_floor(similarity, labels, 0.0) == pytest.approx(0.6)
    assert similarity_floor(similarity, labels, 1.0) == pytest.approx(0.9)
    assert similarity_floor(similarity[:0], labels[:0]) == -1.0
