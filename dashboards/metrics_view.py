"""What the dashboards and rules show, derived from the registry and the scheduled jobs.

- `scheduled()`: every metric name a scheduled job produces, row by row (one row per job):
  a metric added to a job's `METRICS` gets a panel and (with a direction) drift rules.
- `describe(name)`: direction, unit, range and interval from `evaluators.registry`;
  `quantiles_of(metric)`: the window quantiles reported beside a metric read by quantile.
- `BANDS`: the seeds' interpretation bands (seed 004 §11.2, §4.4.4 for the other NDCG
  cutoff, §3.4.3 for silhouette, seed 000 for context relevance, seed 002 for its
  metrics) as Grafana threshold steps, ordered by the metric's direction
  (`tests/dashboards/test_seed_bands.py` lists where each comes from).
- `GOALS`: seed 004 §11.1, which metrics answer which question (docs/concepts/metrics.md
  and stat panels).

Seed 002's bands share their bounds (0.7–0.9, 0.9–1.0): a bound belongs to the band it
starts, as in seed 000's percentages. Grafana colours a value with the highest step whose
value is <= it (steps are ">="). Seed 004's "excellent" is strict (> 0.8), so its step
sits at the next double after 0.8 (`math.nextafter(0.8, inf)` = 0.8000000000000002):
every double above 0.8 is >= it and 0.8 itself is not, so the colouring is exactly the
seed's, with no rounding gap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import ModuleType

from collector.jobs.scheduler import JOB_MODULES
from evaluators.registry import declared, describe

ROW_TITLES: dict[str, str] = {
    "real_users_benchmark": "Retrieval (Tier 1, real-users benchmark)",
    "retrieval_health": "Retrieval health (every trace)",
    "rag_quality": "Generation and end-to-end (LLM judge, Tiers 2/3)",
    "text_quality": "Answers against references (ROUGE, BLEU, semantic similarity)",
    "judge_pipeline": "Production judge (judge pipeline)",
    "judge_consistency": "Our LLM judge (consistency, errors, latency)",
    "ux": "UX (semantic cache and dialogs)",
    "embedding_quality": "Embeddings (Tier 0)",
}
"""Row titles by job; a job not listed gets its name as the title (and still a row)."""

ROW_ORDER = tuple(ROW_TITLES)

GOALS: list[tuple[str, tuple[str, ...]]] = [
    ("Retrieval diagnostics", ("hit_rate@1", "mrr", "ndcg@10")),
    ("Generation diagnostics", ("faithfulness_rating", "answer_relevance")),
    ("End-to-end evaluation", ("e2e_score", "semantic_similarity")),
    (
        "Production judge evaluation",
        ("judge_accuracy", "judge_precision", "judge_recall", "judge_f1"),
    ),
    ("LLM-judge evaluation", ("judge_consistency",)),
    ("Cache optimisation", ("cache_hit_rate",)),
]
"""Seed 004 §11.1: the recommended metrics for each goal (seed 004's faithfulness is the
single rating, `faithfulness_rating`)."""

GOAL_METRICS = frozenset(m for _, metrics in GOALS for m in metrics)


def strictly_above(value: float) -> float:
    """The smallest double > value: a Grafana step (>=) at it means "> value"."""
    return math.nextafter(value, math.inf)


@dataclass(frozen=True)
class Band:
    """One interpretation band: values from `start` (None: from -inf) get `label`."""

    start: float | None
    label: str


LABEL_COLOURS = {
    "needs attention": "red",
    "very poor": "dark-red",
    "poor": "red",
    "fair": "orange",
    "good": "yellow",
    "excellent": "green",
    "normal": "green",
    "too high": "red",
}


def _seed_004(attention: float, excellent: float, section: str = "§11.2") -> tuple[str, list[Band]]:
    text = (
        f"seed 004 {section}: excellent > {excellent} ({excellent} itself is good), "
        f"good {attention}–{excellent}, needs attention < {attention}"
    )
    return text, [
        Band(None, "needs attention"),
        Band(attention, "good"),
        Band(strictly_above(excellent), "excellent"),
    ]


def _seed_002(
    higher: bool, bounds: tuple[float, float, float, float] = (0.3, 0.5, 0.7, 0.9)
) -> tuple[str, list[Band]]:
    """Seed 002's five bands; `bounds` are context precision's own (0.2 … 0.8) where it
    differs from the other metrics' (0.3 … 0.9)."""
    if higher:
        poor, fair, good, excellent = bounds
        return (
            f"seed 002: excellent >= {excellent}, good {good}–{excellent}, "
            f"moderate {fair}–{good}, poor {poor}–{fair}, very poor < {poor}",
            [
                Band(None, "very poor"),
                Band(poor, "poor"),
                Band(fair, "fair"),
                Band(good, "good"),
                Band(excellent, "excellent"),
            ],
        )
    return (
        "seed 002, lower is better: excellent < 0.1, good 0.1–0.3, moderate 0.3–0.5, "
        "poor 0.5–0.7, very poor >= 0.7",
        [
            Band(None, "excellent"),
            Band(0.1, "good"),
            Band(0.3, "fair"),
            Band(0.5, "poor"),
            Band(0.7, "very poor"),
        ],
    )


BANDS: dict[str, tuple[str, list[Band]]] = {
    "hit_rate@1": _seed_004(0.5, 0.8),
    "mrr": _seed_004(0.5, 0.8),
    "ndcg@10": _seed_004(0.5, 0.8),
    "faithfulness_rating": _seed_004(0.7, 0.9),
    "ndcg@5": _seed_004(0.5, 0.9, section="§4.4.4 (NDCG@K)"),
    "faithfulness": _seed_002(higher=True),
    "context_entity_recall": _seed_002(higher=True),
    "context_precision": _seed_002(higher=True, bounds=(0.2, 0.4, 0.6, 0.8)),
    "context_recall": _seed_002(higher=True),
    "response_relevancy": _seed_002(higher=True),
    "noise_sensitivity_relevant": _seed_002(higher=False),
    "noise_sensitivity_irrelevant": _seed_002(higher=False),
    "e2e_score": _seed_004(0.6, 0.8),
    "judge_accuracy": _seed_004(0.85, 0.95),
    "judge_consistency": _seed_004(0.85, 0.95),
    "context_relevance": (
        "seed 000: excellent >= 0.9, good 0.7–0.9, fair 0.5–0.7, poor < 0.5",
        [Band(None, "poor"), Band(0.5, "fair"), Band(0.7, "good"), Band(0.9, "excellent")],
    ),
    "silhouette": (
        "seed 004 §3.4.3: strong structure > 0.7, reasonable 0.5–0.7, weak 0.25–0.5, none < 0.25",
        [
            Band(None, "poor"),
            Band(0.25, "fair"),
            Band(0.5, "good"),
            Band(strictly_above(0.7), "excellent"),
        ],
    ),
    "retrieval_empty_rate": (
        "alert above 0.05 (RagpulseRetrievalEmptyRateHigh): more than 1 trace in 20 "
        "retrieved nothing",
        [Band(None, "normal"), Band(strictly_above(0.05), "too high")],
    ),
}
"""Interpretation bands, ascending by start. For a higher-is-better metric the best band
comes last, for a lower-is-better one first (checked by `check_bands`)."""

_RANK = {"very poor": -1, "needs attention": 0, "poor": 0, "too high": 0, "fair": 1, "good": 2}
_RANK |= {"excellent": 3, "normal": 3}


def check_bands() -> None:
    """Every band's metric is known and its colours run the metric's way."""
    for metric, (_text, bands) in BANDS.items():
        direction = describe(metric).direction
        ranks = [_RANK[b.label] for b in bands]
        if direction == "higher" and ranks != sorted(ranks):
            raise ValueError(f"{metric}: higher is better, so the bands must improve upwards")
        if direction == "lower" and ranks != sorted(ranks, reverse=True):
            raise ValueError(f"{metric}: lower is better, so the bands must worsen upwards")
        if direction not in ("higher", "lower"):
            raise ValueError(f"{metric}: bands need a direction, got {direction!r}")


def steps(metric: str) -> list[tuple[float | None, str]]:
    """Grafana threshold steps (start, colour) of a metric; one neutral step when it has
    no bands."""
    if metric not in BANDS:
        return [(None, "blue")]
    _text, bands = BANDS[metric]
    return [(b.start, LABEL_COLOURS[b.label]) for b in bands]


def job_modules() -> list[ModuleType]:
    known = {m.NAME: m for m in JOB_MODULES}
    ordered = [known[n] for n in ROW_ORDER if n in known]
    return ordered + [m for m in JOB_MODULES if m.NAME not in ROW_ORDER]


def scheduled() -> list[tuple[str, str, tuple[str, ...]]]:
    """(job, row title, metrics) for every scheduled job with fixed metrics, in dashboard
    order (the `external` job's names come from the application: no row of its own)."""
    return [
        (m.NAME, ROW_TITLES.get(m.NAME, m.NAME), tuple(m.METRICS))
        for m in job_modules()
        if m.METRICS
    ]


def quantiles_of(metric: str) -> tuple[str, ...]:
    """The window quantiles the jobs report of `metric` (`quantiles=True` in the registry:
    `latency_ms_p50`, ...), none for other metrics."""
    return tuple(
        name for name, spec in declared().items() if getattr(spec, "quantile_of", None) == metric
    )


def undirected() -> list[str]:
    """Registered metrics that do not declare a direction (no rules, no colours)."""
    return sorted(
        name
        for name, spec in declared().items()
        if spec.direction not in ("higher", "lower", "none")
    )


UNIT_TEXT = {
    "ratio": "a share, 0–1",
    "score": "a score, 0–1",
    "bleu": "BLEU, 0–100",
    "ms": "milliseconds",
    "count": "a count",
    "distance": "a euclidean distance, 0–2",
    "cosine": "a cosine-based score, -1–1",
}
GRAFANA_UNITS = {"ms": "ms", "count": "short"}
DIRECTION_TEXT = {
    "higher": "Higher is better.",
    "lower": "Lower is better.",
    "none": "A size: neither higher nor lower is better (no drift alert).",
}


def panel_text(metric: str) -> str:
    """A panel description: what the metric is, its unit, its direction, its bands."""
    spec = describe(metric)
    parts = [
        f"{spec.description.rstrip('.')}. Unit: {UNIT_TEXT[spec.unit]}.",
        DIRECTION_TEXT.get(str(spec.direction), "Direction not declared."),
    ]
    if metric in BANDS:
        parts.append(f"Colours: {BANDS[metric][0]}.")
    return " ".join(parts)


__all__ = ["BANDS", "GOALS", "GOAL_METRICS", "describe", "scheduled", "steps"]
