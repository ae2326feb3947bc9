"""Every metric a seed gives interpretation bands for has them on the dashboards, with the
seed's bounds (issue 29: `context_precision` had none, so its panels were plain blue).

The seeds are not part of the repository, so their band tables are transcribed here, each
with the seed and section it comes from. A band table is a reading that splits the whole
range into named bands; the seeds' other interpretation notes leave gaps and are listed in
`NOT_BANDS` with the reason, so a reader can check that nothing was left out.
"""

from __future__ import annotations

import math

import pytest

from dashboards.metrics_view import BANDS, scheduled
from evaluators.registry import describe


def above(value: float) -> float:
    """A strict bound ("> 0.8"): the band starts at the next double."""
    return math.nextafter(value, math.inf)


SEED_002 = (0.3, 0.5, 0.7, 0.9)
"""Seed 002's five bands of its higher-is-better metrics: 0.0–0.3 … 0.9–1.0."""

SEED_BANDS: dict[str, tuple[str, tuple[float, ...]]] = {
    "context_relevance": (
        "seed 000 'Интерпретация оценки' (seed 001 'Score Interpretation'): "
        "90-100% / 70-89% / 50-69% / 0-49%",
        (0.5, 0.7, 0.9),
    ),
    "context_entity_recall": (
        "seed 002 ContextEntityRecall, 'Интерпретация результатов'",
        SEED_002,
    ),
    "context_precision": (
        "seed 002 ContextPrecision, 'Интерпретация результатов': "
        "0.8–1.0 / 0.6–0.8 / 0.4–0.6 / 0.2–0.4 / 0.0–0.2",
        (0.2, 0.4, 0.6, 0.8),
    ),
    "context_recall": ("seed 002 ContextRecall, 'Интерпретация результатов'", SEED_002),
    "faithfulness": ("seed 002 Faithfulness, 'Интерпретация результатов'", SEED_002),
    "noise_sensitivity_relevant": (
        "seed 002 NoiseSensitivity (lower is better): 0.0–0.1 / 0.1–0.3 / 0.3–0.5 / "
        "0.5–0.7 / 0.7–1.0",
        (0.1, 0.3, 0.5, 0.7),
    ),
    "noise_sensitivity_irrelevant": ("seed 002 NoiseSensitivity", (0.1, 0.3, 0.5, 0.7)),
    "response_relevancy": ("seed 002 ResponseRelevancy, 'Интерпретация результатов'", SEED_002),
    "silhouette": (
        "seed 004 §3.4.3: > 0.7 strong / 0.5–0.7 reasonable / 0.25–0.5 weak / < 0.25 none",
        (0.25, 0.5, above(0.7)),
    ),
    "hit_rate@1": ("seed 004 §11.2: > 0.8 / 0.5–0.8 / < 0.5", (0.5, above(0.8))),
    "mrr": ("seed 004 §11.2: > 0.8 / 0.5–0.8 / < 0.5", (0.5, above(0.8))),
    "ndcg@10": (
        "seed 004 §11.2: > 0.8 / 0.5–0.8 / < 0.5 (for NDCG@10 it replaces §4.4.4's > 0.9)",
        (0.5, above(0.8)),
    ),
    "ndcg@5": ("seed 004 §4.4.4 (NDCG@K): > 0.9 / 0.5–0.9 / < 0.5", (0.5, above(0.9))),
    "faithfulness_rating": (
        "seed 004 §11.2 'Faithfulness' (seed 004's faithfulness is §5.5.1's single rating)",
        (0.7, above(0.9)),
    ),
    "e2e_score": ("seed 004 §11.2: > 0.8 / 0.6–0.8 / < 0.6", (0.6, above(0.8))),
    "judge_accuracy": (
        "seed 004 §11.2 'Accuracy (Judge Pipeline)' (the same in §9.3.1)",
        (0.85, above(0.95)),
    ),
    "judge_consistency": ("seed 004 §11.2 'Consistency'", (0.85, above(0.95))),
}
"""Metric -> (where the seed gives its bands, the bands' lower bounds in ascending order,
the lowest band starting at -inf)."""

COARSER: dict[str, tuple[str, tuple[float, ...]]] = {
    "context_entity_recall": (
        "seed 003 'Интерпретация скора': 90-100% / 70-90% / 50-70% / 0-50%",
        (0.5, 0.7, 0.9),
    ),
}
"""A second, coarser table for a metric: seed 002's finer one is used, and it keeps every
bound of the coarser one."""

NOT_BANDS: dict[str, str] = {
    "intra_cluster_similarity": "seed 004 §3.4.1: an expected range (0.3–0.8), no bands",
    "inter_cluster_distance": "seed 004 §3.4.2: high / low, no bounds",
    "hit_rate@5": "seed 004 §4.4.1: examples of values (1.0, 0.5), no bands",
    "recall@5": "seed 004 §4.4.3: what 1.0 means, no bands",
    "answer_relevance": "seed 004 §5.5.2: only '> 0.8: high quality'",
    "rougeL_f": "seed 004 §5.5.3: only 'ROUGE-L-F > 0.5 good', 'ROUGE-1-F > 0.4 acceptable'",
    "bleu": "seed 004 §5.5.4: > 50 / 20–40 / < 20 leaves 40–50 unnamed",
    "semantic_similarity": "seed 004 §6.4.2: what ±1 and 0 mean, no bands",
    "cache_hit_rate": "seed 004 §10.3.1: > 0.5 / < 0.1 leaves 0.1–0.5 unnamed",
    "context_preservation": "seed 004 §10.3.2: > 0.7 / < 0.3 leaves 0.3–0.7 unnamed",
}
"""Interpretation notes of the seeds that are not band tables (and so give no colours).
Seed 004 §5.5.1 (faithfulness > 0.8 / < 0.5) and §8.4.1 (consistency > 0.9 / < 0.7) leave
gaps too; §11.2 gives those two metrics full tables, used above."""


def test_every_metric_a_seed_gives_bands_for_has_them() -> None:
    missing = {m: where for m, (where, _) in SEED_BANDS.items() if m not in BANDS}
    assert missing == {}


@pytest.mark.parametrize("metric", sorted(SEED_BANDS))
def test_the_bands_are_the_seeds(metric: str) -> None:
    where, bounds = SEED_BANDS[metric]
    _text, bands = BANDS[metric]
    assert bands[0].start is None, metric
    assert tuple(b.start for b in bands[1:]) == bounds, where
    if metric in COARSER:
        coarse_where, coarse = COARSER[metric]
        assert set(coarse) <= set(bounds), coarse_where


def test_banded_metrics_are_on_the_dashboards_and_the_notes_name_real_metrics() -> None:
    drawn = {m for _job, _title, metrics in scheduled() for m in metrics}
    assert sorted(set(SEED_BANDS) - drawn) == []
    for metric in NOT_BANDS:
        describe(metric)  # a known metric (raises otherwise)
