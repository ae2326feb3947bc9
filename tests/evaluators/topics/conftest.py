"""Small, well-separated topics in a 24-dimensional space, with texts to match."""

from __future__ import annotations

import numpy as np
import pytest

WORDS = (
    ("card", "карта"),
    ("refund", "возврат"),
    ("vacation", "отпуск"),
    ("password", "пароль"),
)


Blobs = tuple[np.ndarray, list[str], np.ndarray]


def blobs(
    per_topic: int, topics: int = 4, spread: float = 0.15, seed: int = 0, dim: int = 24
) -> Blobs:
    """`topics` groups of `per_topic` unit rows around orthogonal axes, texts naming them."""
    rng = np.random.default_rng(seed)
    rows = []
    texts = []
    truth = []
    for t in range(topics):
        centre = np.zeros(dim)
        centre[t] = 1.0
        points = centre + rng.normal(0.0, spread, (per_topic, dim))
        rows.append(points / np.linalg.norm(points, axis=1, keepdims=True))
        en, ru = WORDS[t % len(WORDS)]
        texts += [f"{en} question {i}" if i % 2 else f"{ru} вопрос {i}" for i in range(per_topic)]
        truth += [t] * per_topic
    return np.vstack(rows).astype(np.float32), texts, np.asarray(truth)


@pytest.fixture
def four_topics() -> Blobs:
    return blobs(30)
