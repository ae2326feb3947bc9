"""Plain entry points for one judge metric: `ascore` (async) and `score` (sync).

`score` runs `ascore` under `asyncio.run` (no nest_asyncio), so call it from synchronous
code only; inside an event loop await `ascore`. For several metrics with aggregates and
confidence intervals use `evaluators.runner.evaluate` / `aevaluate`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from evaluators.judge.client import JudgeClient
from evaluators.outcome import Outcome
from evaluators.registry import EvalContext, resolve
from evaluators.sample import Sample


async def ascore(
    metric: str,
    samples: Sequence[Sample],
    judge: JudgeClient | None,
    *,
    embedder: Any = None,
    options: Mapping[str, Any] | None = None,
) -> list[Outcome]:
    """One outcome per sample for the judge metric `metric` (all samples concurrently)."""
    resolved = resolve(metric)
    if resolved.spec.kind != "async_per_sample":
        raise ValueError(f"{metric!r} is not a judge metric; use evaluators.runner.evaluate")
    ctx = EvalContext(embedder=embedder, judge=judge, options=dict(options or {}))
    return list(await resolved.spec.compute(samples, ctx, resolved.k))


def score(
    metric: str,
    samples: Sequence[Sample],
    judge: JudgeClient | None,
    *,
    embedder: Any = None,
    options: Mapping[str, Any] | None = None,
) -> list[Outcome]:
    """Synchronous `ascore`."""
    return asyncio.run(ascore(metric, samples, judge, embedder=embedder, options=options))
