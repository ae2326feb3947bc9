"""Metric registry: canonical name -> `MetricSpec` (a plain dict, like sacrebleu's METRICS).

Families with a cutoff (`hit_rate@k`, `ndcg@k`, ...) are registered once under their
family name with `cutoff="required"` (`"optional"` for `mrr`/`mrr@k`);
`resolve("ndcg@10")` gives the spec with k = 10.
Every metric module adds its specs to `FAMILIES` through `register`.

Every metric declares which way is better (`direction`), its `unit` and its
`value_range`: the dashboards' colours and the drift/drop alert rules are generated from
them (`dashboards/build.py`), so a metric registered without a direction gets no
panel colours and no drift rule, and `tests/evaluators/test_registry_meta.py` fails.
Metrics a job computes from other tables than the traces (the LLM judge's own
consistency, error rate and latency) are declared in `JOB_METRICS` with the same facts,
and so are the window quantiles of a metric registered with `quantiles=True`
(`latency_ms_p50`, `latency_ms_p95`, `latency_ms_p99`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from evaluators.errors import UnknownMetricError
from evaluators.outcome import Outcome
from evaluators.quantiles import QUANTILES, RELATIVE_ACCURACY, quantile_name
from evaluators.sample import Sample

if TYPE_CHECKING:
    from evaluators.embedder import TextEncoder
    from evaluators.judge.protocol import Judge


@dataclass(frozen=True)
class EvalContext:
    """What metrics may use besides the samples, passed in explicitly (never global).

    `embedder` is an `evaluators.embedder.Embedder` (or any `TextEncoder`), `judge` an
    `evaluators.judge.client.JudgeClient` (or any `Judge`); `options` holds thresholds and
    knobs by name.
    """

    embedder: TextEncoder | None = None
    judge: Judge | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0


@dataclass(frozen=True)
class DatasetValue:
    """The value of a dataset-level metric (not a mean of per-sample scores)."""

    value: float
    n: int
    ci_lower: float | None = None
    ci_upper: float | None = None
    skip_reasons: Mapping[str, int] = field(default_factory=dict)
    """Samples the metric left out, counted by reason (e.g. "no ground truth": 3)."""


Direction = Literal["higher", "lower", "none"]
"""Which way is better: "higher" (hit rate), "lower" (noise sensitivity, latency, error
rates), or "none" for sizes that are neither good nor bad (n_clusters, total_pairs): no
drift alert and no colours for those."""

Unit = Literal["ratio", "score", "bleu", "ms", "count", "distance", "cosine"]
"""How a value reads: "ratio" a share in 0..1; "score" a 0..1 score (not a share);
"bleu" sacrebleu's 0..100; "ms" milliseconds; "count" a number of things; "distance" a
euclidean distance between unit vectors (0..2); "cosine" a cosine-based score in -1..1."""

UNIT_RANGES: dict[str, tuple[float | None, float | None]] = {
    "ratio": (0.0, 1.0),
    "score": (0.0, 1.0),
    "bleu": (0.0, 100.0),
    "ms": (0.0, None),
    "count": (0.0, None),
    "distance": (0.0, 2.0),
    "cosine": (-1.0, 1.0),
}
"""The value range of each unit (None: unbounded)."""


PerSampleFn = Callable[[Sequence[Sample], EvalContext, int | None], Sequence[Outcome]]
AsyncPerSampleFn = Callable[
    [Sequence[Sample], EvalContext, int | None], Awaitable[Sequence[Outcome]]
]
DatasetFn = Callable[[Sequence[Sample], EvalContext, int | None], DatasetValue | Outcome]


@dataclass(frozen=True)
class MetricSpec:
    """How to compute one metric family.

    kind:
      - "per_sample": `compute(samples, ctx, k)` returns one Outcome per sample (batched so
        vectorized code and embedding batches stay efficient); aggregated as a mean (or a
        proportion when `proportion`), with a 95% CI.
      - "async_per_sample": the same, as a coroutine (LLM-judge metrics).
      - "dataset": `compute(samples, ctx, k)` returns a `DatasetValue` for the whole set,
        or a `Skipped`/`Failed` outcome when it is undefined.
    """

    family: str
    kind: Literal["per_sample", "async_per_sample", "dataset"]
    compute: Callable[..., Any]
    needs: str
    description: str
    cutoff: Literal["none", "required", "optional"] = "none"
    proportion: bool = False
    direction: Direction | None = None
    """Required in practice (None fails the registry test and leaves the metric out of
    the generated drift rules and colours)."""
    unit: Unit = "ratio"
    interval: bool = True
    """Whether aggregates carry a 95% confidence interval (False for counts and for
    dataset values without one): the dashboards draw a band and the drift rules compare
    it only when there is one."""
    uses_embedder: bool = False
    uses_judge: bool = False
    reads: frozenset[str] | None = None
    """The `Sample` fields `compute` reads besides `trace_id`, or None for any. Callers
    that build samples from storage may then leave the others at their defaults: the UX
    job does not fetch and map the retrieved contexts of every trace it scores."""
    quantiles: bool = False
    """Per-sample metrics read by quantile (latencies): the jobs also report each window's
    p50, p95 and p99 (`<family>_p50`, ..., declared in `JOB_METRICS` by `register`), from
    mergeable DDSketch bins of the scores (`evaluators.quantiles`)."""

    @property
    def value_range(self) -> tuple[float | None, float | None]:
        return UNIT_RANGES[self.unit]


@dataclass(frozen=True)
class JobMetric:
    """A metric a scheduled job computes itself (not from samples through `compute`):
    declared with the same facts as a `MetricSpec` so dashboards and rules know it."""

    family: str
    description: str
    direction: Direction
    unit: Unit = "ratio"
    interval: bool = True
    quantile_of: str | None = None
    """A window quantile's per-sample metric (`latency_ms` for `latency_ms_p95`)."""
    per_trace: bool = False
    """Stored per trace (or per session) in the job's outcomes and bucket sums, like a
    per-sample metric: the jobs' drift detectors run on it, and the generated page and
    ticket rules cover it (else it is compared window against window)."""
    uses_judge: bool = False
    """Scored by the LLM judge on a sample (`ragpulse plan` prices its sampling rate)."""

    @property
    def value_range(self) -> tuple[float | None, float | None]:
        return UNIT_RANGES[self.unit]


JOB_METRICS: dict[str, JobMetric] = {}


def declare(metric: JobMetric) -> JobMetric:
    if metric.family in JOB_METRICS or metric.family in FAMILIES:
        raise ValueError(f"metric {metric.family!r} is declared twice")
    JOB_METRICS[metric.family] = metric
    return metric


@dataclass(frozen=True)
class ResolvedMetric:
    name: str
    spec: MetricSpec
    k: int | None = None


FAMILIES: dict[str, MetricSpec] = {}


def register(spec: MetricSpec) -> MetricSpec:
    if spec.family in FAMILIES or spec.family in JOB_METRICS:
        raise ValueError(f"metric family {spec.family!r} is registered twice")
    FAMILIES[spec.family] = spec
    if spec.quantiles:
        for q in QUANTILES:
            declare(
                JobMetric(
                    quantile_name(spec.family, q),
                    f"{q * 100:g}th percentile of {spec.family} over a window (DDSketch bins: "
                    f"within {RELATIVE_ACCURACY:.0%} of the exact value). {spec.description}",
                    direction=spec.direction or "none",
                    unit=spec.unit,
                    interval=False,
                    quantile_of=spec.family,
                )
            )
    return spec


def _load_all() -> None:
    # Importing a metric module registers its families; done lazily so that importing
    # `evaluators.registry` alone stays cheap and has no side effects beyond this dict.
    import importlib

    for module in _METRIC_MODULES:
        importlib.import_module(module)


_METRIC_MODULES: list[str] = [
    "evaluators.retrieval.hit_rate",
    "evaluators.retrieval.reciprocal_rank",
    "evaluators.retrieval.precision",
    "evaluators.retrieval.recall",
    "evaluators.retrieval.ndcg",
    "evaluators.retrieval.empty_rate",
    "evaluators.text.rouge",
    "evaluators.text.bleu",
    "evaluators.semantic",
    "evaluators.embedding_quality",
    "evaluators.ux",
    "evaluators.latency",
    "evaluators.classification",
    "evaluators.judge.context_relevance",
    "evaluators.judge.context_entity_recall",
    "evaluators.judge.context_precision",
    "evaluators.judge.context_recall",
    "evaluators.judge.faithfulness",
    "evaluators.judge.faithfulness_rating",
    "evaluators.judge.noise_sensitivity",
    "evaluators.judge.response_relevancy",
    "evaluators.judge.answer_relevance",
    "evaluators.judge.e2e_score",
    "evaluators.judge_quality",
    "evaluators.conversation_metrics",
]


def known_names() -> list[str]:
    _load_all()
    names: list[str] = []
    for family, spec in FAMILIES.items():
        if spec.cutoff != "required":
            names.append(family)
        if spec.cutoff != "none":
            names.append(f"{family}@k")
    return sorted(names)


def resolve(name: str) -> ResolvedMetric:
    """Canonical name -> spec; unknown names raise `UnknownMetricError` listing known ones."""
    _load_all()
    family, sep, k_text = name.strip().partition("@")
    spec = FAMILIES.get(family)
    if spec is None:
        raise UnknownMetricError(
            f"unknown metric {name!r}; known metrics: {', '.join(known_names())}"
        )
    if not sep:
        if spec.cutoff == "required":
            raise UnknownMetricError(f"metric {family!r} needs a cutoff, e.g. {family}@10")
        return ResolvedMetric(name=family, spec=spec)
    if spec.cutoff == "none":
        raise UnknownMetricError(f"metric {family!r} takes no cutoff (got {name!r})")
    if not k_text.isdigit() or int(k_text) < 1:
        raise UnknownMetricError(f"{name!r}: the cutoff must be a positive integer")
    return ResolvedMetric(name=f"{family}@{int(k_text)}", spec=spec, k=int(k_text))


def declared() -> dict[str, MetricSpec | JobMetric]:
    """Every registered family and job metric by name."""
    _load_all()
    out: dict[str, MetricSpec | JobMetric] = {}
    out.update(FAMILIES)
    out.update(JOB_METRICS)
    return out


def describe(name: str) -> MetricSpec | JobMetric:
    """The facts (direction, unit, range, interval) of any canonical metric name a job
    reports: a registered family (`ndcg@10` -> `ndcg`) or a `JOB_METRICS` entry."""
    _load_all()
    family = name.strip().partition("@")[0]
    if family in JOB_METRICS:
        return JOB_METRICS[family]
    return resolve(name).spec
