"""Fixed-threshold alerts on a steady week: the point estimate flaps, the interval does not
(issue 32, item 4), evaluated by a real Prometheus.

`RagpulseProductionJudgeAccuracyLow` (24h accuracy < 0.85, `for: 15m`) for the smallest
tenant: labelled traces arrive as a Poisson process of `--per-day` (240) a day, each
judged right with probability `--accuracy` (steady: 0.90; a real drop: 0.75). Every 10
minutes the job publishes the 24h window's accuracy, its Wilson 95% interval
(`evaluators.aggregate.wilson_interval`, as the exporter's series carry it) and the
sample count; a day of warm-up, then `--weeks` weeks per run, one tenant per run. The
series are back-filled into a real Prometheus (`benchmarks.alerting_rules.RulesProm`),
which evaluates, every minute, the rule before issue 32 (the point estimate below the
threshold, no `keep_firing_for`) and the shipped rule
(`dashboards/quality_rules.threshold_rule`: the interval's upper bound below it,
`keep_firing_for: 1h`), `for:` and `keep_firing_for:` applied. Reported: firing episodes
a week and the share of the time firing, per rule.

Run: `.venv/bin/python -m benchmarks.threshold_flapping [--weeks 20]`.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from benchmarks.alerting_rules import Episode, RulesProm
from dashboards.quality_rules import OVERALL_OR_TENANT, THRESHOLD_ALERTS, threshold_rule
from evaluators.aggregate import wilson_interval

ALERT = next(a for a in THRESHOLD_ALERTS if a.name == "RagpulseProductionJudgeAccuracyLow")
DAY = 86400.0
WEEK = 7 * DAY
STEP = 600.0
"""The jobs publish a window every 10 minutes."""
Point = tuple[float, float, float, float, int]
"""(seconds, value, ci_lower, ci_upper, n) of one published window."""


def point_rule() -> dict[str, Any]:
    """The rule as it was before issue 32: the window's point estimate."""
    selector = f'{{metric="{ALERT.metric}",window="{ALERT.window}",{OVERALL_OR_TENANT}}}'
    rule = {k: v for k, v in threshold_rule(ALERT).items() if k != "keep_firing_for"}
    return {
        **rule,
        "expr": f"ragpulse_metric_value{selector} < {ALERT.threshold:g} and on (metric, "
        f"window, tenant) ragpulse_metric_samples{{{OVERALL_OR_TENANT}}} >= {ALERT.min_samples}",
    }


def published(
    accuracy: float, per_day: float, days: float, rng: np.random.Generator
) -> list[Point]:
    """(seconds, value, ci_lower, ci_upper, n) of the 24h window every 10 minutes."""
    count = int(rng.poisson(per_day * days))
    arrivals = np.sort(rng.uniform(0.0, days * DAY, count))
    right = np.concatenate([[0], np.cumsum(rng.random(count) < accuracy)])
    out = []
    at = DAY
    while at <= days * DAY:
        lo_i, hi_i = np.searchsorted(arrivals, [at - DAY, at], side="right")
        n = int(hi_i - lo_i)
        k = float(right[hi_i] - right[lo_i])
        if n:
            low, high = wilson_interval(k, n)
            out.append((at, k / n, low, high, n))
        at += STEP
    return out


def write(
    path: Path, runs: dict[str, list[tuple[float, float, float, float, int]]], base: float
) -> None:
    names = ("ragpulse_metric_value", "ragpulse_metric_ci_lower", "ragpulse_metric_ci_upper",
             "ragpulse_metric_samples")  # fmt: skip
    with path.open("w") as out:
        for i, name in enumerate(names):
            out.write(f"# TYPE {name} gauge\n")
            for tenant, points in runs.items():
                labels = f'metric="{ALERT.metric}",window="{ALERT.window}",tenant="{tenant}"'
                out.writelines(f"{name}{{{labels}}} {p[i + 1]} {base + p[0]:.0f}\n" for p in points)
        out.write("# EOF\n")


def episodes_a_week(
    accuracy: float, per_day: float, weeks: int, seed: int, workdir: Path
) -> dict[str, tuple[float, float]]:
    """Firing episodes a week and the share of the time firing, of the point and the
    interval rule, over `weeks` one-week runs."""
    rng = np.random.default_rng(seed)
    runs = {f"run{r}": published(accuracy, per_day, 8.0, rng) for r in range(weeks)}
    base = (time.time() // DAY) * DAY - 10 * DAY
    name = f"acc{accuracy:g}"
    write(workdir / f"{name}.om", runs, base)
    rules = {"point estimate (before)": point_rule(), "interval (shipped)": threshold_rule(ALERT)}
    out: dict[str, tuple[float, float]] = {}
    with RulesProm(workdir / f"{name}.om", workdir / name, lookback_s=STEP + 60) as prom:
        for label, rule in rules.items():
            path = workdir / f"{name}-{len(out)}.yml"
            path.write_text(yaml.safe_dump({"groups": [{"name": "g", "rules": [rule]}]}))
            found: list[Episode] = prom.evaluate([path], base + DAY, base + 8 * DAY)
            firing = sum(e.end - e.start for e in found) / (weeks * WEEK)
            out[label] = (len(found) / weeks, firing)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--weeks", type=int, default=20)
    parser.add_argument("--per-day", type=float, default=240.0)
    parser.add_argument("--accuracy", type=float, nargs="+", default=[0.90, 0.75])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    print(f"\n{ALERT.name} ({ALERT.metric} over {ALERT.window} < {ALERT.threshold:g}, "
          f"for {ALERT.for_}), {args.per_day:g} labelled traces a day, {args.weeks} "
          "weeks\n")  # fmt: skip
    print("| true accuracy | rule | firing episodes a week | share of the time firing |")
    print("| ---: | --- | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        for accuracy in args.accuracy:
            found = episodes_a_week(accuracy, args.per_day, args.weeks, args.seed, Path(tmp))
            for label, (rate, share) in found.items():
                print(f"| {accuracy:.2f} | {label} | {rate:.2f} | {share:.0%} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
