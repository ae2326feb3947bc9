"""Shared machinery of the judge metrics: skip rules, per-model fan-out, combining models.

A judge metric module supplies `precheck(sample, ctx) -> skip reason | None` and
`per_model(judge, model, sample, ctx) -> float | Skipped`; `judge_metric` turns them into a
registered "async_per_sample" metric that

- skips every sample with "no judge configured" when `ctx.judge` is None;
- runs all samples of the batch concurrently (the client's semaphore bounds the calls);
- asks every judge model and reports the mean, keeping each model's value in
  `JudgeScore.by_model`;
- maps failures to `Failed(error_type)` and an exhausted budget to `Skipped("budget")`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from evaluators.judge.errors import BudgetExceeded, JudgeError, JudgeSchemaError
from evaluators.judge.prompts.base import Prompt
from evaluators.judge.protocol import Judge
from evaluators.outcome import Failed, Outcome, Score, Skipped
from evaluators.registry import Direction, EvalContext, MetricSpec, Unit, register
from evaluators.sample import Sample
from evaluators.signature import text_hash

logger = logging.getLogger(__name__)

NO_JUDGE = "no judge configured"
BUDGET = "budget"
NO_CONTEXT_TEXT = "no context text"
"""Contexts were retrieved but none has a text to judge (an empty retrieval is not this)."""

Precheck = Callable[[Sample, EvalContext], str | None]
PerModel = Callable[[Any, str, Sample, EvalContext], Awaitable[float | Skipped]]

_EMPTY: Mapping[str, float] = MappingProxyType({})

PROMPTS_BY_METRIC: dict[str, tuple[Prompt, ...]] = {}
PROMPT_CHOICE: dict[str, Callable[[Any], Sequence[Prompt]]] = {}
"""For metrics whose prompts depend on the judge configuration: config -> prompts used."""


@dataclass(frozen=True, slots=True)
class JudgeScore(Score):
    """A judge score: the mean over judge models, with each model's own value."""

    by_model: Mapping[str, float] = field(default_factory=lambda: _EMPTY)


def prompt_hash(metric: str, config: Any = None) -> str | None:
    """The combined version of every prompt a judge metric uses with this judge
    configuration (for its signature)."""
    choose = PROMPT_CHOICE.get(metric)
    prompts = (
        tuple(choose(config))
        if choose is not None and config is not None
        else PROMPTS_BY_METRIC.get(metric)
    )
    if not prompts:
        return None
    return text_hash("|".join(p.version for p in prompts))


def texts_of(sample: Sample) -> list[str]:
    """Context texts in rank order (contexts without text cannot be judged)."""
    return [c.text for c in sample.contexts if c.text and c.text.strip()]


def judge_metric(
    family: str,
    *,
    description: str,
    needs: str,
    prompts: Sequence[Prompt],
    precheck: Precheck,
    per_model: PerModel,
    direction: Direction | None = None,
    unit: Unit = "score",
    uses_embedder: bool = False,
    prompts_for: Callable[[Any], Sequence[Prompt]] | None = None,
) -> MetricSpec:
    """Register one judge metric family built from `precheck` and `per_model`.

    `prompts` are all the prompts the metric may use; `prompts_for(judge_config)` picks
    those a configuration uses, when a setting switches between them (for the signature).
    `direction` must be given (see `evaluators.registry`): the dashboards and alert rules
    are generated from it.
    """
    PROMPTS_BY_METRIC[family] = tuple(prompts)
    if prompts_for is not None:
        PROMPT_CHOICE[family] = prompts_for

    async def compute(
        samples: Sequence[Sample], ctx: EvalContext, k: int | None = None
    ) -> list[Outcome]:
        judge = ctx.judge
        if judge is None:
            return [Skipped(NO_JUDGE) for _ in samples]
        jobs = (_one(family, judge, s, ctx, precheck, per_model) for s in samples)
        return list(await asyncio.gather(*jobs))

    return register(
        MetricSpec(
            family=family,
            kind="async_per_sample",
            compute=compute,
            needs=needs,
            description=description,
            direction=direction,
            unit=unit,
            uses_embedder=uses_embedder,
            uses_judge=True,
        )
    )


async def _one(
    family: str,
    judge: Judge,
    sample: Sample,
    ctx: EvalContext,
    precheck: Precheck,
    per_model: PerModel,
) -> Outcome:
    reason = precheck(sample, ctx)
    if reason is not None:
        return Skipped(reason)
    models: Sequence[str] = judge.models
    results = await asyncio.gather(
        *(_guarded(family, per_model(judge, m, sample, ctx), sample) for m in models)
    )
    return combine(models, results)


async def _guarded(
    family: str, job: Awaitable[float | Skipped], sample: Sample
) -> float | Skipped | Failed:
    try:
        return await job
    except BudgetExceeded:
        return Skipped(BUDGET)
    except JudgeError as exc:
        return Failed(exc.error_type, str(exc))
    except Exception as exc:
        # A bug must not sink the whole batch: count it as this sample's failure.
        logger.exception("judge metric %s failed on trace %s", family, sample.trace_id)
        return Failed("internal_error", f"{type(exc).__name__}: {exc}")


def combine(models: Sequence[str], results: Sequence[float | Skipped | Failed]) -> Outcome:
    """Mean over models. A failure or an exhausted budget for any model decides the outcome
    (a mean over a subset of the judges would silently change what the number means); a
    value undefined for every model is skipped with the first model's reason."""
    failed = [r for r in results if isinstance(r, Failed)]
    if failed:
        return failed[0]
    skipped = [r for r in results if isinstance(r, Skipped)]
    if any(s.reason == BUDGET for s in skipped):
        return Skipped(BUDGET)
    values = {m: float(r) for m, r in zip(models, results, strict=True) if isinstance(r, float)}
    if not values:
        return skipped[0] if skipped else Skipped("no judge models")
    mean = sum(values.values()) / len(values)
    return JudgeScore(value=mean, by_model=MappingProxyType(values))


def by_item(rows: Sequence[Mapping[str, Any]], item_key: str, value_key: str, n: int) -> list[Any]:
    """Values of `rows` ordered by their 1-based `item_key`; exactly items 1..n, once each.

    A reply that skips or repeats an item is a shape error (worth the one repair request).
    """
    values: dict[int, Any] = {}
    for row in rows:
        item = int(row[item_key])
        if item in values or not 1 <= item <= n:
            raise JudgeSchemaError(f"{item_key} {item} is repeated or not in 1..{n}")
        values[item] = row[value_key]
    if len(values) != n:
        missing = sorted(set(range(1, n + 1)) - set(values))
        raise JudgeSchemaError(f"no verdict for {item_key} {missing}")
    return [values[i] for i in range(1, n + 1)]
