"""Alerting at every volume (issue 40): false pages of a steady week and detection delays,
through the product's detectors and a real Prometheus with the shipped rules.

1. False pages. Two weeks of production-like traffic (`benchmarks.alerting_volume_traffic`:
   five tenants 50/30/15/4/1%, a daily cycle, weekends with another mix, 5% judged),
   streamed an hour at a time, at each `--volumes` rate and `--seeds` seed. Over the second
   week, every `--step` seconds, the product's detectors (the shipped `alerting` settings;
   one engine at every volume, `drift_buckets.drift_points_from_frame` over the per-minute
   sums a job stores) make the points a job publishes. The exporter's families
   (`exporters.openmetrics`) go through `promtool tsdb create-blocks-from openmetrics` into
   a real Prometheus, which evaluates the shipped `quality.yml` rules every minute over the
   week (`benchmarks.alerting_rules`: `for:` and `keep_firing_for:` as the rule manager
   applies them). Reported: pages (severity critical) a week family-wise (overlapping
   episodes of any series merged), the series that paged, and the highest page scores
   (S/h) with their series.
2. Detection delay of hit_rate@1 drops (`--drops`) for every tenant and overall: hours from
   the drop (a weekday, its hour varying with the seed) to the first page score >= 1 of
   that series, evaluated every 5 minutes, median over seeds ("-": none within 24 h), beside
   the Lorden bound ln(ARL0) / KL at the scope's mean ground-truth rate and the ratio, and
   the median ratios to the bound in the traffic that follows each seed's drop and to that
   bound on the detectors' 5-minute run grid (the first run that could page).
   They are computed from per-minute (count, hits) draws (`hit_frame`), cheap at any volume.

Run: `nice -n 15 .venv/bin/python -m benchmarks.alerting_volumes [--volumes 120 1200 4000
12000 120000] [--seeds 3] [--skip-delays | --skip-false]`.
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from benchmarks.alerting import FACTS
from benchmarks.alerting_rules import Episode, RulesProm, family_episodes
from benchmarks.alerting_traffic import METRICS, Drop
from benchmarks.alerting_volume_traffic import (
    DAY,
    GROUND_TRUTH,
    GROUPS,
    NAMES,
    TENANTS,
    WEEK,
    Frame,
    H,
    hit_frame,
    hour,
    mean_share,
    rate_factor,
    shares,
)
from collector.jobs.drift.detector import DriftConfig
from collector.jobs.drift.sums import drift_points_from_frame
from collector.jobs.run.publish import quality_points
from collector.settings import load_settings
from exporters.openmetrics import OpenMetricsWriter
from ragpulse.job_setup import drift_config

RULES = Path(__file__).resolve().parents[1] / "dashboards" / "prometheus" / "rules" / "quality.yml"
Key = tuple[str, str, str]
"""(detector, metric, group) of a drift series."""


@dataclass
class Week:
    """One steady week of one volume and seed."""

    per_hour: float
    seed: int
    traces: int = 0
    episodes: list[Episode] = field(default_factory=list)
    worst: dict[Key, float] = field(default_factory=dict)
    seconds: float = 0.0
    made_s: float = 0.0
    """Of `seconds`, making the points (the rest: promtool and Prometheus)."""

    def pages(self) -> int:
        return len(family_episodes([e for e in self.episodes if e.severity == "critical"]))

    def paged(self) -> dict[str, int]:
        """The series that paged, `metric/group`, and their episodes."""
        counted: dict[str, int] = {}
        for e in self.episodes:
            if e.severity == "critical":
                labels = dict(e.labels)
                name = f"{labels.get('metric')}/{labels.get('tenant') or 'overall'}"
                counted[name] = counted.get(name, 0) + 1
        return counted

    def top(self, count: int = 3) -> list[tuple[float, str]]:
        pages = [
            (v, f"{m}/{g.partition('=')[2] or 'overall'}")
            for (d, m, g), v in self.worst.items()
            if d == "page"
        ]
        return sorted(pages, reverse=True)[:count]


def steady_week(
    per_hour: float, seed: int, steps: np.ndarray, config: DriftConfig, workdir: Path,
    rules: Path = RULES,
) -> Week:  # fmt: skip
    """The detectors' points of the second week at `steps` and the pages a real Prometheus
    makes of them."""
    began = time.perf_counter()
    week = Week(per_hour, seed)
    sums = Frame(METRICS)
    for h in range(math.ceil(steps.max() / H) + 1):
        sums.add(hour(per_hour, seed, h))
    frame = sums.frame()
    del sums
    base = (time.time() // DAY) * DAY - 15 * DAY  # the simulated fortnight ends a day ago
    data = workdir / f"{int(per_hour)}-{seed}"
    writer = OpenMetricsWriter(data.with_suffix(".om"), ["tenant"])
    for at in steps.tolist():
        made = drift_points_from_frame(frame, FACTS, at, WEEK, config)
        for window, item in made:
            value = item.aggregate.value
            if window.name.startswith("drift:") and value is not None:
                key = (window.name[6:], item.aggregate.metric, item.group.key)
                week.worst[key] = max(week.worst.get(key, 0.0), value)
        writer.add(datetime.fromtimestamp(base + at, UTC), quality_points("benchmark", made, at))
    writer.close()
    made_s = time.perf_counter() - began
    week.traces = int(frame.n[(frame.metric == METRICS.index("judge_latency_ms"))
                              & (frame.group == 0)].sum())  # fmt: skip
    step = float(steps[1] - steps[0]) if steps.size > 1 else 600.0
    with RulesProm(data.with_suffix(".om"), data, lookback_s=step + 60) as prom:
        week.episodes = prom.evaluate([rules], base + float(steps[0]), base + float(steps[-1]))
    week.seconds = time.perf_counter() - began
    week.made_s = made_s
    return week


RUN_EVERY = 300.0
"""Seconds between detector runs in the delay measurement (`alerting.every`'s default)."""


def traces_needed(per_hour: float, tenant: str | None, size: float, config: DriftConfig) -> float:
    """ln(ARL0) / KL(p1 || p0): the ground-truth traces the optimal detector held to the same
    false-page budget needs, to first order, to see the drop (Lorden 1971), as
    `benchmarks.alerting.best_delay` for this traffic."""
    page = config.detectors[0]
    if tenant is None:
        share, p0 = 1.0, sum(mean_share(t.name) * t.hit_rate for t in TENANTS)
    else:
        share, p0 = mean_share(tenant), TENANTS[NAMES.index(tenant)].hit_rate
    rate = per_hour * GROUND_TRUTH * share
    arl = page.series_metrics * len(GROUPS) * rate * 168 / page.false_alarms_per_week
    p1 = p0 * (1 - size)
    kl = p1 * math.log(p1 / p0) + (1 - p1) * math.log((1 - p1) / (1 - p0))
    return math.log(arl) / kl


def best_delay(per_hour: float, tenant: str | None, size: float, config: DriftConfig) -> float:
    """The Lorden bound in hours at the scope's week-mean ground-truth rate."""
    share = 1.0 if tenant is None else mean_share(tenant)
    return traces_needed(per_hour, tenant, size, config) / (per_hour * GROUND_TRUTH * share)


def traffic_delay(
    per_hour: float, tenant: str | None, size: float, at: float, config: DriftConfig
) -> float:
    """The Lorden bound in hours in the traffic that follows the drop at `at`: the time its
    expected ground-truth traces (the daily cycle, the weekday or weekend mix) take to
    reach `traces_needed`. A drop at night, or in a tenant busier at weekends, has fewer
    traces an hour than the week's mean, so no detector can see it as soon as the
    mean-rate bound says; one in a busy hour can be seen sooner."""
    needed = traces_needed(per_hour, tenant, size, config)
    seen, t, minute = 0.0, at, 60.0
    while seen < needed:
        mid = t + minute / 2
        share = 1.0 if tenant is None else float(shares(mid)[NAMES.index(tenant)])
        step = per_hour * GROUND_TRUTH * rate_factor(mid) * share * minute / H
        if seen + step >= needed:
            return (t - at + minute * (needed - seen) / step) / H
        seen += step
        t += minute
    return (t - at) / H


def drop_time(seed: int) -> float:
    """A Tuesday, at an hour that varies with the seed."""
    return 8 * DAY + ((seed * 7) % 24) * H


def delay(per_hour: float, tenant: str | None, size: float, seed: int, config: DriftConfig,
          horizon_h: float = 24.0) -> float | None:  # fmt: skip
    """Hours from a hit_rate@1 drop to its series' first page (None: not within the horizon)."""
    at = drop_time(seed)
    drop = Drop("hit_rate@1", size, at, tenant)
    frame = hit_frame(per_hour, seed, at / H + horizon_h + 1, drop)
    facts = [f for f in FACTS if f.name == "hit_rate@1"]
    group = "" if tenant is None else f"tenant={tenant}"
    t = at + RUN_EVERY
    while t <= at + horizon_h * H:
        for window, item in drift_points_from_frame(frame, facts, t, WEEK, config):
            value = item.aggregate.value
            mine = window.name == "drift:page" and item.group.key == group
            if mine and value is not None and value >= 1.0:
                return (t - at) / H
        t += RUN_EVERY
    return None


def on_the_grid(bound_h: float, every_s: float = RUN_EVERY) -> float:
    """The first detector run at or after `bound_h` hours from the drop (runs every
    `every_s` from the drop on): no detector evaluated on that grid can page earlier."""
    return math.ceil(bound_h * H / every_s - 1e-9) * every_s / H


def delay_rows(per_hour: float, args: argparse.Namespace, config: DriftConfig) -> list[str]:
    """A row per scope: each drop's median delay over the seeds; in brackets the Lorden
    bound at the week-mean rate and the ratio of the medians, then the medians over the
    seeds of each seed's delay over its bound in the traffic after its drop
    (`traffic_delay`), and over that bound put on the detectors' run grid (`on_the_grid`)."""
    rows = []
    for tenant in (*NAMES, None):
        cells = []
        for size in args.drops:
            seeds = range(args.seed, args.seed + args.seeds)
            found = [delay(per_hour, tenant, size, seed, config) for seed in seeds]
            middle = statistics.median([math.inf if d is None else d for d in found])
            bound = best_delay(per_hour, tenant, size, config)
            if not math.isfinite(middle):
                cells.append(f"- ({bound:.2f})")
                continue
            traffic = [traffic_delay(per_hour, tenant, size, drop_time(s), config) for s in seeds]
            ratios = [math.inf if d is None else d / b for d, b in zip(found, traffic, strict=True)]
            grid = [
                math.inf if d is None else d / on_the_grid(b)
                for d, b in zip(found, traffic, strict=True)
            ]
            cells.append(
                f"{middle:.2f} ({bound:.2f}, {middle / bound:.2f}x; "
                f"{statistics.median(ratios):.2f}x; {statistics.median(grid):.2f}x)"
            )
        share = 1.0 if tenant is None else mean_share(tenant)
        scope = f"{tenant or 'overall'} ({share:.1%})"
        rows.append(f"| {per_hour:,.0f}/h | {scope} | " + " | ".join(cells) + " |")
    return rows


def week_row(per_hour: float, weeks: list[Week]) -> str:
    pages = [w.pages() for w in weeks]
    counted: dict[str, int] = {}
    for w in weeks:
        for name, episodes in w.paged().items():
            counted[name] = counted.get(name, 0) + episodes
    paged = [k + (f" x{v}" if v > 1 else "") for k, v in sorted(counted.items())]
    tops = sorted(((v, s, w.seed) for w in weeks for v, s in w.top()), reverse=True)[:3]
    top = ", ".join(f"{v:.2f} {s} (seed {seed})" for v, s, seed in tops)
    return (
        f"| {per_hour:,.0f}/h | {', '.join(map(str, pages))} | "
        f"{statistics.mean(pages):.2f} | {'; '.join(paged) or '-'} | {top} |"
    )


def false_pages(
    args: argparse.Namespace, config: DriftConfig, workdir: Path
) -> dict[float, list[Week]]:
    """Every volume's steady weeks, smallest volume first, printed as they end."""
    steps = np.arange(WEEK, 2 * WEEK + 1, args.step)
    print("| volume | pages per seed | pages / week | paged series | "
          "highest page scores |\n| ---: | --- | ---: | --- | --- |", flush=True)  # fmt: skip
    out: dict[float, list[Week]] = {}
    for per_hour in args.volumes:
        weeks = []
        for seed in range(args.seed, args.seed + args.seeds):
            w = steady_week(per_hour, seed, steps, config, workdir)
            print(f"<!-- {per_hour:.0f}/h seed {seed}: {w.traces:,} traces, "
                  f"{w.pages()} pages, {w.seconds:.0f} s ({w.made_s:.0f} s making "
                  f"points); top {w.top()} -->", flush=True)  # fmt: skip
            weeks.append(w)
        out[per_hour] = weeks
        print(week_row(per_hour, weeks), flush=True)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--volumes", type=float, nargs="+",
                        default=[120, 1200, 4000, 12000, 120000])  # fmt: skip
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1, help="the first seed")
    parser.add_argument("--step", type=float, default=600.0, help="seconds between runs")
    parser.add_argument("--drops", type=float, nargs="+", default=[0.10, 0.20, 0.40])
    parser.add_argument("--skip-false", action="store_true", help="only the delays")
    parser.add_argument("--skip-delays", action="store_true", help="only the false pages")
    args = parser.parse_args(argv)  # fmt: skip
    config = drift_config(load_settings())
    if config is None:
        raise SystemExit("alerting is disabled in the settings")
    if not args.skip_false:
        with tempfile.TemporaryDirectory(prefix="alerting-volumes-") as tmp:
            false_pages(args, config, Path(tmp))
    if not args.skip_delays:
        print("\n| volume | scope (share) | " + " | ".join(f"-{d:.0%}" for d in args.drops)
              + " |\n| ---: | --- |" + " ---: |" * len(args.drops), flush=True)  # fmt: skip
        for per_hour in args.volumes:
            for row in delay_rows(per_hour, args, config):
                print(row, flush=True)
        print(f"\n(hours to the first page, median of {args.seeds} seeds; in brackets the "
              "Lorden bound ln(ARL0)/KL at the scope's mean rate and the ratio; after ';' "
              "the median ratio to each seed's bound in the traffic after its drop, and to "
              "that bound on the detectors' 5-minute run grid)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
