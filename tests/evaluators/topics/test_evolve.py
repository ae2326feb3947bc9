"""Anchored re-clustering: steady traffic keeps its ids, a new kind of question gets one."""

from __future__ import annotations

import numpy as np

from evaluators.topics import discover, kept_share, nearest_topic
from evaluators.topics.evolve import Topics, first_topics, recluster
from tests.evaluators.topics.conftest import blobs


def stable_labels(topics: Topics, rows: np.ndarray) -> np.ndarray:
    labels: np.ndarray = np.asarray(topics.ids)[nearest_topic(rows, topics.centroids).topics]
    return labels


def test_steady_traffic_keeps_its_topic_ids() -> None:
    rows, texts, _ = blobs(40, seed=1)
    later, later_texts, _ = blobs(40, seed=2)
    before = first_topics(discover(rows, texts, min_size=5))
    after = recluster(before, later, later_texts, min_size=5, seed=1)
    assert after.new == () and after.retired == ()
    assert kept_share(stable_labels(before, later), stable_labels(after, later)) >= 0.95
    assert set(after.labels.tolist()) == set(before.ids)


def test_a_new_kind_of_question_gets_a_new_id_and_a_gone_one_retires() -> None:
    rows, texts, truth = blobs(40, topics=5, seed=1)
    old = truth < 4
    before = first_topics(
        discover(rows[old], [t for t, o in zip(texts, old, strict=True) if o], min_size=5)
    )
    assert before.ids == (0, 1, 2, 3)
    now = truth > 0  # topic 0 is gone, topic 4 is new
    after = recluster(
        before, rows[now], [t for t, n in zip(texts, now, strict=True) if n], min_size=5, seed=1
    )
    assert len(after.new) == 1 and after.new[0] == 4 and after.next_id == 5
    new_rows = after.labels[truth[now] == 4]
    assert np.all(new_rows == 4)
    assert len(after.retired) == 1


def test_no_previous_topics_numbers_from_next_id() -> None:
    rows, texts, _ = blobs(20)
    empty = first_topics(discover(rows[:0], [], min_size=5))
    after = recluster(empty, rows, texts, min_size=5)
    assert after.ids == (0, 1, 2, 3) and after.next_id == 4
