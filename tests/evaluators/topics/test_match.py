"""Stable ids: Hungarian matching of centroids, new ids for what matches nothing."""

from __future__ import annotations

import numpy as np
import pytest

from evaluators.topics import kept_share, match_topics, relabel


def unit(*rows: list[float]) -> np.ndarray:
    array = np.asarray(rows, np.float32)
    out: np.ndarray = array / np.linalg.norm(array, axis=1, keepdims=True)
    return out


def test_the_best_total_wins_over_greedy_choices() -> None:
    previous = unit([1, 0, 0], [0.8, 0.6, 0])
    # new 0 is nearest to previous 0 (cos 0.98), but giving previous 0 to new 1 (0.95)
    # and previous 1 to new 0 (0.92) scores more in total than greedy's 0.98 + 0.6
    new = unit([0.97, 0.25, 0], [0.95, -0.31, 0])
    cosine = new @ previous.T
    got = match_topics(previous, [10, 11], new, min_similarity=0.0)
    best = max(cosine[0, 0] + cosine[1, 1], cosine[0, 1] + cosine[1, 0])
    chosen = sum(cosine[j, [10, 11].index(i)] for j, i in enumerate(got.ids))
    assert chosen == pytest.approx(best)
    assert got.new == () and got.retired == () and got.next_id == 12


def test_unmatched_clusters_get_new_ids_and_lost_topics_retire() -> None:
    previous = unit([1, 0, 0], [0, 1, 0])
    new = unit([0.99, 0.05, 0], [0, 0, 1], [0.05, 0, 0.99])
    got = match_topics(previous, [3, 7], new, next_id=20)
    assert got.ids == (3, 20, 21)
    assert got.new == (20, 21)
    assert got.retired == (7,)
    assert got.next_id == 22
    assert got.similarity[0] > 0.99 and got.similarity[1] == 0.0


def test_first_clustering_and_empty_new_clustering() -> None:
    none = np.zeros((0, 3), np.float32)
    got = match_topics(none, [], unit([1, 0, 0], [0, 1, 0]))
    assert got.ids == (0, 1) and got.new == (0, 1)
    gone = match_topics(unit([1, 0, 0]), [4], none)
    assert gone.ids == () and gone.retired == (4,) and gone.next_id == 5


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="ids for"):
        match_topics(unit([1, 0]), [1, 2], unit([1, 0]))
    with pytest.raises(ValueError, match="distinct"):
        match_topics(unit([1, 0], [0, 1]), [1, 1], unit([1, 0]))
    with pytest.raises(ValueError, match="next_id"):
        match_topics(unit([1, 0]), [5], unit([1, 0]), next_id=3)


def test_relabel_and_kept_share() -> None:
    labels = relabel(np.array([0, 1, -1, 1]), (40, 41))
    assert labels.tolist() == [40, 41, -1, 41]
    assert kept_share(labels, np.array([40, 42, -1, 41])) == 0.75
    assert kept_share(np.array([]), np.array([])) == 1.0
