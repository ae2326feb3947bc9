"""Run named metrics over samples and aggregate them (value, n, 95% CI, skips, errors).

`evaluate` is the synchronous API (async judge metrics run under one `asyncio.run`),
`aevaluate` the asynchronous one (sync metrics run in a worker thread so the event loop
stays responsive). Async per-sample metrics get their samples in chunks of
`ASYNC_CHUNK`, all chunks of all async metrics awaited together, so the judge client's
own semaphore sets the concurrency and progress moves chunk by chunk.

For the length of one evaluation the embedder is wrapped in a `CachingEmbedder`, so
metrics over the same texts (UX, Tier 0, semantic similarity) encode each text once.
With `group_by="tenant"` every metric is also aggregated per value of that tag:
per-sample metrics reuse their outcomes, dataset metrics are recomputed on the group.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluators.aggregate import Aggregate, aggregate_dataset, aggregate_outcomes
from evaluators.embedder import CachingEmbedder
from evaluators.outcome import Failed, Outcome
from evaluators.progress import ProgressCallback, ProgressEvent, judge_counters
from evaluators.registry import DatasetValue, EvalContext, ResolvedMetric, resolve
from evaluators.sample import Sample
from evaluators.signature import Signature
from evaluators.thresholds import threshold_signature

logger = logging.getLogger(__name__)

ASYNC_CHUNK = 32
NO_GROUP = "(none)"
"""Group key of samples that lack the grouping tag."""


@dataclass(frozen=True)
class EvaluationResult:
    """Aggregates per metric name, per-sample outcomes of per-sample metrics, and, when
    grouped, aggregates per group value (`groups[value][metric]`)."""

    aggregates: dict[str, Aggregate]
    per_sample: dict[str, list[Outcome]]
    groups: dict[str, dict[str, Aggregate]] = field(default_factory=dict)
    group_by: str | None = None


def resolve_all(metric_names: Sequence[str]) -> list[ResolvedMetric]:
    """Resolve every name first, so a typo fails before any work (UnknownMetricError)."""
    resolved: dict[str, ResolvedMetric] = {}
    for name in metric_names:
        metric = resolve(name)
        resolved.setdefault(metric.name, metric)
    return list(resolved.values())


def group_indices(samples: Sequence[Sample], tag: str) -> dict[str, list[int]]:
    """Sample positions per value of `tags[tag]` (missing tag: `NO_GROUP`), sorted by value."""
    groups: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(samples):
        groups[s.tags.get(tag, NO_GROUP)].append(i)
    return dict(sorted(groups.items()))


def signature_for(metric: ResolvedMetric, ctx: EvalContext) -> Signature:
    """How this metric's number is made: evaluator version, embedding model, judge model
    and prompt hash (the judge client may provide `signature(metric_name)` itself)."""
    spec = metric.spec
    sig = Signature()
    if spec.uses_judge and ctx.judge is not None:
        own = getattr(ctx.judge, "signature", None)
        made = own(metric.name) if callable(own) else None
        if isinstance(made, Signature):
            sig = made
        else:
            model = getattr(ctx.judge, "model_name", None) or getattr(ctx.judge, "model", None)
            sig = dataclasses.replace(sig, judge_model=str(model) if model else None)
    if spec.uses_embedder and ctx.embedder is not None:
        model = str(ctx.embedder.model_name)
        sig = dataclasses.replace(
            sig,
            embedding_model=model,
            thresholds=threshold_signature(spec.family, ctx.options, model),
        )
    return sig


class _Reporter:
    def __init__(self, callback: ProgressCallback | None, judge: Any):
        self.callback = callback
        self.judge = judge

    def __call__(self, metric: str, done: int, total: int) -> None:
        if self.callback is not None:
            self.callback(ProgressEvent(metric, done, total, judge_counters(self.judge)))


def _with_cache(ctx: EvalContext, metrics: Sequence[ResolvedMetric]) -> EvalContext:
    if ctx.embedder is None or isinstance(ctx.embedder, CachingEmbedder):
        return ctx
    if not any(m.spec.uses_embedder for m in metrics):
        return ctx
    return dataclasses.replace(ctx, embedder=CachingEmbedder(ctx.embedder))


def _failed(exc: BaseException) -> Failed:
    return Failed(type(exc).__name__, str(exc)[:500])


def _checked(name: str, outcomes: Sequence[Outcome], expected: int) -> list[Outcome]:
    if len(outcomes) != expected:
        return [
            Failed("MetricContractError", f"{name} returned {len(outcomes)} outcomes")
        ] * expected
    return list(outcomes)


def _run_sync(
    metric: ResolvedMetric, samples: Sequence[Sample], ctx: EvalContext
) -> list[Outcome] | DatasetValue | Outcome:
    try:
        if metric.spec.kind == "dataset":
            result: DatasetValue | Outcome = metric.spec.compute(samples, ctx, metric.k)
            return result
        return _checked(metric.name, metric.spec.compute(samples, ctx, metric.k), len(samples))
    except Exception as exc:
        logger.warning("metric %s failed", metric.name, exc_info=True)
        if metric.spec.kind == "dataset":
            return _failed(exc)
        return [_failed(exc)] * len(samples)


async def _run_async_metrics(
    metrics: Sequence[ResolvedMetric],
    samples: Sequence[Sample],
    ctx: EvalContext,
    report: _Reporter,
) -> dict[str, list[Outcome]]:
    results: dict[str, list[Outcome]] = {}
    done: dict[str, int] = {}

    async def chunk(metric: ResolvedMetric, start: int) -> None:
        part = samples[start : start + ASYNC_CHUNK]
        try:
            outcomes = _checked(
                metric.name, await metric.spec.compute(part, ctx, metric.k), len(part)
            )
        except Exception as exc:
            logger.warning("metric %s failed on a chunk", metric.name, exc_info=True)
            outcomes = [_failed(exc)] * len(part)
        results[metric.name][start : start + len(part)] = outcomes
        done[metric.name] += len(part)
        report(metric.name, done[metric.name], len(samples))

    jobs: list[Awaitable[None]] = []
    for metric in metrics:
        results[metric.name] = [Failed("NotRun")] * len(samples)
        done[metric.name] = 0
        report(metric.name, 0, len(samples))
        jobs.extend(chunk(metric, start) for start in range(0, len(samples), ASYNC_CHUNK))
    await asyncio.gather(*jobs)
    return results


def _assemble(
    metrics: Sequence[ResolvedMetric],
    samples: Sequence[Sample],
    ctx: EvalContext,
    raw: Mapping[str, list[Outcome] | DatasetValue | Outcome],
    group_by: str | None,
    recompute: Callable[[ResolvedMetric, Sequence[Sample]], DatasetValue | Outcome],
    aggregate: bool = True,
) -> EvaluationResult:
    aggregates: dict[str, Aggregate] = {}
    per_sample: dict[str, list[Outcome]] = {}
    groups: dict[str, dict[str, Aggregate]] = {}
    index = group_indices(samples, group_by) if group_by else {}
    for metric in metrics:
        sig = signature_for(metric, ctx)
        result = raw[metric.name]
        if isinstance(result, list):
            per_sample[metric.name] = result
            if not aggregate:
                continue
            aggregates[metric.name] = aggregate_outcomes(
                metric.name,
                result,
                proportion=metric.spec.proportion,
                seed=ctx.seed,
                signature=sig,
            )
        else:
            aggregates[metric.name] = aggregate_dataset(
                metric.name, result, len(samples), signature=sig
            )
        for value, members in index.items():
            target = groups.setdefault(value, {})
            if isinstance(result, list):
                target[metric.name] = aggregate_outcomes(
                    metric.name,
                    [result[i] for i in members],
                    proportion=metric.spec.proportion,
                    seed=ctx.seed,
                    signature=sig,
                )
            else:
                subset = [samples[i] for i in members]
                target[metric.name] = aggregate_dataset(
                    metric.name, recompute(metric, subset), len(subset), signature=sig
                )
    return EvaluationResult(aggregates, per_sample, groups, group_by)


def evaluate(
    samples: Sequence[Sample],
    metric_names: Sequence[str],
    ctx: EvalContext,
    progress: ProgressCallback | None = None,
    *,
    group_by: str | None = None,
    aggregate: bool = True,
) -> EvaluationResult:
    """Compute and aggregate `metric_names` over `samples` (synchronous API). Without
    `aggregate` only the per-sample outcomes are kept (the jobs aggregate their windows
    from stored outcomes: a bootstrap per batch would be paid for nothing)."""
    metrics = resolve_all(metric_names)
    ctx = _with_cache(ctx, metrics)
    report = _Reporter(progress, ctx.judge)
    raw: dict[str, list[Outcome] | DatasetValue | Outcome] = {}
    for metric in metrics:
        if metric.spec.kind != "async_per_sample":
            report(metric.name, 0, len(samples))
            raw[metric.name] = _run_sync(metric, samples, ctx)
            report(metric.name, len(samples), len(samples))
    async_metrics = [m for m in metrics if m.spec.kind == "async_per_sample"]
    if async_metrics:
        raw.update(asyncio.run(_run_async_metrics(async_metrics, samples, ctx, report)))
    return _assemble(
        metrics, samples, ctx, raw, group_by, lambda m, subset: _dataset(m, subset, ctx), aggregate
    )


async def aevaluate(
    samples: Sequence[Sample],
    metric_names: Sequence[str],
    ctx: EvalContext,
    progress: ProgressCallback | None = None,
    *,
    group_by: str | None = None,
) -> EvaluationResult:
    """The asynchronous API: same result as `evaluate`, for callers inside an event loop."""
    metrics = resolve_all(metric_names)
    ctx = _with_cache(ctx, metrics)
    report = _Reporter(progress, ctx.judge)
    raw: dict[str, list[Outcome] | DatasetValue | Outcome] = {}
    async_metrics = [m for m in metrics if m.spec.kind == "async_per_sample"]
    if async_metrics:
        raw.update(await _run_async_metrics(async_metrics, samples, ctx, report))
    for metric in metrics:
        if metric.spec.kind != "async_per_sample":
            report(metric.name, 0, len(samples))
            raw[metric.name] = await asyncio.to_thread(_run_sync, metric, samples, ctx)
            report(metric.name, len(samples), len(samples))
    return await asyncio.to_thread(
        _assemble, metrics, samples, ctx, raw, group_by, lambda m, s: _dataset(m, s, ctx)
    )


def _dataset(
    metric: ResolvedMetric, samples: Sequence[Sample], ctx: EvalContext
) -> DatasetValue | Outcome:
    result = _run_sync(metric, samples, ctx)
    if isinstance(result, list):
        # Only dataset metrics are recomputed per group.
        return Failed("MetricContractError", "expected a dataset value")
    return result
