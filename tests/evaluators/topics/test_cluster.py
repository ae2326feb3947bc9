"""`discover` finds well-separated topics without being told how many."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

from evaluators.topics import SpaceOptions, discover
from evaluators.topics.cluster import dissolve_small, topic_centroids, ward_partition
from tests.evaluators.topics.conftest import Blobs, blobs


def test_finds_the_number_of_topics(four_topics: Blobs) -> None:
    rows, texts, truth = four_topics
    found = discover(rows, texts, min_size=5)
    assert found.count == 4
    assert normalized_mutual_info_score(truth, found.labels) == pytest.approx(1.0)
    assert adjusted_rand_score(truth, found.labels) == pytest.approx(1.0)
    assert found.sizes == (30, 30, 30, 30)
    assert found.sampled == 120


def test_topics_are_ordered_by_size_and_centroids_are_unit_means() -> None:
    rows, texts, _ = blobs(20)
    keep = np.concatenate([np.arange(0, 80), np.arange(0, 20)])  # topic 0 twice as large
    found = discover(rows[keep], [texts[i] for i in keep], min_size=5)
    assert found.sizes[0] == 40
    assert np.all(found.labels[:20] == 0)
    assert np.allclose(np.linalg.norm(found.centroids, axis=1), 1.0, atol=1e-5)
    mean = rows[keep][found.labels == 0].mean(axis=0)
    assert np.allclose(found.centroids[0], mean / np.linalg.norm(mean), atol=1e-5)


def test_results_are_read_only(four_topics: Blobs) -> None:
    rows, texts, _ = four_topics
    found = discover(rows, texts, min_size=5)
    with pytest.raises(ValueError):
        found.labels[0] = 3


def test_rows_outside_the_sample_get_their_nearest_topic(four_topics: Blobs) -> None:
    rows, texts, truth = four_topics
    found = discover(rows, texts, min_size=5, sample_size=60, seed=3)
    assert found.sampled == 60
    assert adjusted_rand_score(truth, found.labels) == pytest.approx(1.0)


def test_max_topics_caps_the_count(four_topics: Blobs) -> None:
    rows, texts, _ = four_topics
    assert discover(rows, texts, min_size=5, max_topics=2).count == 2


def test_same_seed_same_topics(four_topics: Blobs) -> None:
    rows, texts, _ = four_topics
    a = discover(rows, texts, min_size=5, seed=7, sample_size=80)
    b = discover(rows, texts, min_size=5, seed=7, sample_size=80)
    assert np.array_equal(a.labels, b.labels)


def test_smoothing_never_spans_more_neighbours_than_the_smallest_topic(four_topics: Blobs) -> None:
    rows, texts, _ = four_topics
    found = discover(rows, texts, min_size=5, options=SpaceOptions(neighbours=10))
    assert found.options.neighbours == 5


def test_too_few_rows_make_one_topic_or_none() -> None:
    rows, texts, _ = blobs(3, topics=2)
    assert discover(rows, texts, min_size=5).count == 1
    empty = discover(np.zeros((0, 8), np.float32), [], min_size=5)
    assert empty.count == 0 and empty.labels.shape == (0,)


@pytest.mark.parametrize(
    ("rows", "texts", "kwargs", "message"),
    [
        (np.zeros(4), ["a"] * 4, {}, "2-d"),
        (np.ones((3, 2)), ["a"] * 2, {}, "texts"),
        (np.ones((3, 2)), ["a"] * 3, {"min_size": 1}, "min_size"),
        (np.ones((3, 2)), ["a"] * 3, {"max_topics": 0}, "max_topics"),
        (np.full((3, 2), np.nan), ["a"] * 3, {}, "NaN"),
        (np.ones((3, 2)), ["a"] * 3, {"sample_size": 4}, "sample_size"),
    ],
)
def test_bad_input_is_refused(
    rows: np.ndarray, texts: list[str], kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        discover(rows, texts, **kwargs)


def test_ward_partition_and_dissolving_small_clusters() -> None:
    space = np.array([[1, 0], [0.99, 0.1], [0, 1], [0.1, 0.99], [0.7, 0.7]], np.float32)
    labels = ward_partition(space, 3)
    assert len(set(labels.tolist())) == 3
    merged = dissolve_small(space, np.array([0, 0, 1, 1, 2]), min_size=2)
    assert merged.tolist()[:4] == [0, 0, 1, 1] and merged[4] in (0, 1)
    centroids = topic_centroids(space, np.array([0, 0, 1, 1, -1]), 2)
    assert centroids.shape == (2, 2)
