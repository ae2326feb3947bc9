"""Simulated SLI event counters for the SLO alerting benchmark, as Prometheus would scrape them.

Each run is one tenant of `ragpulse_slo_events_total{slo, tenant, outcome}`, scraped once a
minute: per minute, Poisson(judged events) with a daily cycle (the rate follows
1 + 0.6 cos(2 pi (hour - 15) / 24): night volume a quarter of the day's, the mean the stated
volume), each event bad with the run's error ratio: half the error budget on steady traffic,
`factor` times the budget during a burn. A steady run is steady throughout; a burn run
burns from `Run.start` to `Run.end`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

H = 3600.0
DAY = 24 * H
MINUTE = 60.0
JUDGED = 0.05
"""Judge SLIs are scored on a 5% sample: an SLI event per judged trace."""


@dataclass(frozen=True)
class Run:
    """One simulated tenant: its name, the burn factor (0: steady) and the burn interval
    (seconds from the simulation's start)."""

    tenant: str
    factor: float
    start: float = math.inf
    end: float = math.inf


def per_minute(per_hour: float, minutes: int) -> np.ndarray:
    """Expected SLI events per minute: `per_hour` traces an hour on average, 5% judged,
    a daily cycle whose trough is a quarter of its peak."""
    hour = (np.arange(minutes) * MINUTE / H) % 24
    shape = 1 + 0.6 * np.cos(2 * math.pi * (hour - 15) / 24)
    return per_hour * JUDGED / 60 * shape


def counters(
    run: Run, budget: float, per_hour: float, minutes: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Cumulative good and bad events at the end of every minute."""
    events = rng.poisson(per_minute(per_hour, minutes))
    t = np.arange(minutes) * MINUTE
    ratio = np.where((t >= run.start) & (t < run.end), run.factor * budget, budget / 2)
    bad = rng.binomial(events, np.minimum(ratio, 1.0))
    return np.cumsum(events - bad), np.cumsum(bad)


def write_counters(
    path: Path, slos: Sequence[tuple[str, float, Sequence[Run]]], per_hour: float,
    minutes: int, base: float, seed: int,
) -> None:  # fmt: skip
    """Every run's counters (per SLO: its name, budget and runs) as timestamped OpenMetrics
    (for promtool's back-fill)."""
    rng = np.random.default_rng(seed)
    stamps = base + np.arange(1, minutes + 1) * MINUTE
    with path.open("w") as out:
        out.write("# TYPE ragpulse_slo_events counter\n")
        for slo, budget, runs in slos:
            for run in runs:
                good, bad = counters(run, budget, per_hour, minutes, rng)
                for outcome, values in (("good", good), ("bad", bad)):
                    labels = f'slo="{slo}",tenant="{run.tenant}",outcome="{outcome}"'
                    out.writelines(
                        f"ragpulse_slo_events_total{{{labels}}} {v} {t:.0f}\n"
                        for v, t in zip(values.tolist(), stamps.tolist(), strict=True)
                    )
        out.write("# EOF\n")


def write_recorded(path: Path, recorded: Iterable[tuple[str, list[dict[str, Any]]]]) -> int:
    """Recording rules' results (name, `query_range` result) as timestamped OpenMetrics:
    what the rule manager would have stored at each evaluation. Returns the samples."""
    samples = 0
    with path.open("w") as out:
        for name, result in recorded:
            out.write(f"# TYPE {name} gauge\n")
            for series in result:
                metric = series["metric"]
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(metric.items()))
                values = series["values"]
                out.writelines(f"{name}{{{labels}}} {v} {t}\n" for t, v in values)
                samples += len(values)
        out.write("# EOF\n")
    return samples
