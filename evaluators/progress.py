"""Progress reporting of an evaluation: a plain callback receiving `ProgressEvent`s.

The runner calls it when a metric starts, after each finished chunk of samples, and when
the metric ends. `counters` carries extra numbers to show next to the bar, e.g. the LLM
judge's calls, cache hits, errors and cost (read from `ctx.judge.stats`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ProgressEvent:
    metric: str
    done: int
    total: int
    counters: Mapping[str, float] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.done >= self.total


ProgressCallback = Callable[[ProgressEvent], None]

JUDGE_COUNTERS = ("calls", "cache_hits", "errors", "cost_usd")


def judge_counters(judge: Any) -> dict[str, float]:
    """Numeric counters of `judge.stats` (a mapping, dataclass or object), if there is one."""
    stats = getattr(judge, "stats", None) if judge is not None else None
    if stats is None:
        return {}
    if isinstance(stats, Mapping):
        items = dict(stats)
    elif dataclasses.is_dataclass(stats) and not isinstance(stats, type):
        items = {f.name: getattr(stats, f.name) for f in dataclasses.fields(stats)}
    else:
        items = {name: getattr(stats, name, None) for name in JUDGE_COUNTERS}
    return {
        str(k): float(v)
        for k, v in items.items()
        if isinstance(v, int | float) and not isinstance(v, bool)
    }
