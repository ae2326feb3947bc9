"""Which stored outcomes a metric name the user typed refers to: its jobs and direction."""

from __future__ import annotations

from dataclasses import dataclass

from collector.settings import Settings

EXTERNAL_PREFIX = "external:"


@dataclass(frozen=True)
class MetricTarget:
    metric: str
    jobs: tuple[str, ...]
    lower_is_better: bool

    @property
    def ordering(self) -> str:
        return "highest (lower is better)" if self.lower_is_better else "lowest"


def _window_only(name: str) -> bool:
    """True for a metric computed over whole windows (a dataset metric): no trace has a
    score of it."""
    from evaluators.errors import UnknownMetricError
    from evaluators.registry import resolve

    try:
        return resolve(name).spec.kind == "dataset"
    except UnknownMetricError:
        return False


def metric_target(settings: Settings, name: str, *, from_traces: bool = False) -> MetricTarget:
    """The jobs storing per-trace outcomes of `name` and which way is worse; a name no
    job computes per trace raises `UserError` with the names that work. `from_traces`:
    the caller also reads the per-trace forms of window metrics from the traces
    (`evaluators.classification.DECISION_SCORES`: `ragpulse compare --a/--b`)."""
    from collector.errors import UserError
    from collector.jobs.scheduler import definitions, stored_per_trace
    from evaluators.classification import DECISION_SCORES
    from evaluators.errors import UnknownMetricError
    from evaluators.registry import describe
    from ragpulse.metric_names import suggest

    name = name.strip()
    if name.startswith(EXTERNAL_PREFIX):
        return MetricTarget(name, ("external",), lower_is_better=False)
    jobs = tuple(
        job
        for job, definition in definitions(settings).items()
        if name in stored_per_trace(definition)
    )
    readable = from_traces and name in DECISION_SCORES
    if jobs and _window_only(name) and not readable:
        per_trace = [
            m
            for job in jobs
            for m in definitions(settings)[job].metrics
            if not _window_only(m) or (from_traces and m in DECISION_SCORES)
        ]
        others = f"; per trace, {', '.join(jobs)} has {', '.join(per_trace)}" if per_trace else ""
        if name in DECISION_SCORES:
            what = (
                "and not stored per trace (`ragpulse compare --a V1 --b V2 --metric "
                f"{name}` compares versions on it, from the traces' judge decisions)"
            )
        else:
            what = "and is no mean of per-trace scores, so no trace has a score of it"
        raise UserError(
            f"{name} is computed over whole windows {what}; its value per window and group "
            f"is in metric_results (`ragpulse report`, /metrics){others}"
        )
    if not jobs:
        known = sorted(
            {
                m
                for d in definitions(settings).values()
                for m in stored_per_trace(d)
                if not _window_only(m)
            }
        )
        hint = suggest(name)
        did_you = f" (did you mean {hint}?)" if hint and hint != name else ""
        raise UserError(
            f"no job stores per-trace scores of {name!r}{did_you}; metrics with "
            f"per-trace scores: {', '.join(known)}"
        )
    try:
        direction = describe(name).direction
    except UnknownMetricError:
        direction = "higher"
    return MetricTarget(name, jobs, lower_is_better=direction == "lower")


def per_trace_targets(settings: Settings) -> dict[str, tuple[tuple[str, ...], str]]:
    """Every metric with per-trace outcomes and a direction: name -> (its jobs, direction)."""
    from collector.jobs.scheduler import definitions
    from evaluators.errors import UnknownMetricError
    from evaluators.registry import resolve

    out: dict[str, tuple[tuple[str, ...], str]] = {}
    for job, definition in definitions(settings).items():
        if definition.factory is not None:
            continue
        for metric in definition.metrics:
            try:
                spec = resolve(metric).spec
            except UnknownMetricError:
                continue
            if spec.kind == "dataset" or spec.direction in (None, "none"):
                continue
            jobs, _ = out.get(metric, ((), spec.direction))
            out[metric] = ((*jobs, job), spec.direction)
    return out
