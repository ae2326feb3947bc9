"""The clustering space: neighbours, smoothing, and the options' checks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from evaluators.topics import SpaceOptions
from evaluators.topics.represent import (
    clustering_space,
    nearest_neighbours,
    normalise_rows,
    text_features,
)


def test_normalise_rows_leaves_zero_rows_zero() -> None:
    got = normalise_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert np.allclose(got, [[0.6, 0.8], [0.0, 0.0]])


def test_nearest_neighbours_exclude_the_row_itself() -> None:
    rows = normalise_rows(np.array([[1, 0], [0.9, 0.1], [0, 1], [0.1, 0.9]], np.float32))
    got = nearest_neighbours(rows, 1)
    assert got[:, 0].tolist() == [1, 0, 3, 2]


def test_text_features_need_shared_wording() -> None:
    assert text_features(["a", "b"], 8, 0) is None
    got = text_features(["card lost", "lost card", "card arrived", "refund please"], 8, 0)
    assert got is not None and got.shape[0] == 4


def test_the_space_joins_embeddings_and_is_unit_norm() -> None:
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(12, 6)).astype(np.float32)
    texts = [f"card question {i}" for i in range(12)]
    space = clustering_space(rows, texts, SpaceOptions(neighbours=3), seed=0)
    assert space.shape == (12, 12)
    assert np.allclose(np.linalg.norm(space, axis=1), 1.0, atol=1e-5)
    plain = clustering_space(rows, texts, SpaceOptions(text_weight=0.0, rounds=0), seed=0)
    assert np.allclose(plain, normalise_rows(rows))


@pytest.mark.parametrize(
    "kwargs",
    [{"text_weight": -1.0}, {"neighbours": 0}, {"rounds": -1}, {"pull": 1.5}],
)
def test_bad_options_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        SpaceOptions(**kwargs)
