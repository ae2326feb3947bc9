"""Alerting benchmark: false pages on steady traffic and detection delays, by real Prometheus.

1. False alarms. Two weeks of steady traffic (`benchmarks.alerting_traffic`: three tenants,
   14 retrieval metrics from one rank per query, judged and reference-scored samples,
   log-normal latencies) at each `--volumes` rate. Over the second week, every 10 minutes
   (every hour at 12,000 traces/h) the real aggregation (`OutcomeColumns.aggregate`:
   windows 1h/24h/7d with their intervals) and the real detectors (the shipped `alerting`
   settings; one engine since issue 40: `drift_points_from_frame` over the per-minute sums
   of the week's traces) make the points
   a job publishes; the exporter's own families
   (`exporters.openmetrics`) turn them into timestamped OpenMetrics, which
   `promtool tsdb create-blocks-from openmetrics` loads into a real Prometheus
   (`--query.lookback-delta` just over the step, as a 15 s scrape of an unchanged gauge
   would). Each alerting rule of a rule file is then evaluated by that Prometheus every
   minute over the week (`query_range` of its expression), `for:` and `keep_firing_for:`
   applied to the results exactly as the rule manager does. Reported per rule file:
   firing episodes per rule, and family-wise episodes (overlapping episodes of any alert
   merged into one), all alerts and pages (severity critical) apart. `--baseline REV`
   also evaluates the rules of that git revision (today's rules before issue 17) on its
   own points (their rules read only the window gauges).
2. Detection delay. Eight steady days, then a relative drop of hit_rate@1 (every
   retrieval metric follows the rank) for each tenant (acme 50% of the traffic and hit
   rate 0.75, globex 30% and 0.65, initech 20% and 0.80) or all, or of faithfulness for
   globex or all, of each `--drops` size: hours from the drop to the first page
   (`ragpulse_drift_score{detector="page"}` >= 1 for that metric and group, evaluated
   every 5 minutes), median over `--seeds` runs; "-" when not paged in 24 h. Beside each
   hit-rate delay, in brackets, the optimal detector's asymptotic delay (`best_delay`).

Run: `.venv/bin/python -m benchmarks.alerting [--volumes 120 1200 12000] [--baseline
938c36a] [--seeds 3]` (Prometheus and promtool from the Debian package `prometheus`).
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.alerting_rules import Episode, RulesProm, family_episodes
from benchmarks.alerting_traffic import METRICS, Drop, H, simulate
from benchmarks.outcome_columns import OutcomeColumns, frame_from_columns
from collector.jobs.drift.detector import DriftConfig, MetricFacts
from collector.jobs.drift.sums import drift_points_from_frame
from collector.jobs.run.publish import QualityPoint, quality_points
from collector.jobs.windows.window import parse_windows
from collector.settings import load_settings
from evaluators.registry import resolve
from exporters.openmetrics import OpenMetricsWriter
from ragpulse.job_setup import drift_config

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "dashboards" / "prometheus" / "rules"
WEEK = 7 * 24 * H
WINDOWS = parse_windows(["1h", "24h", "7d"])
FACTS = [MetricFacts(m, str(resolve(m).spec.direction), resolve(m).spec.unit) for m in METRICS]
PROPORTIONS = {m: resolve(m).spec.proportion for m in METRICS}


def detector_points(
    columns: OutcomeColumns, facts: list[MetricFacts], at: float, config: DriftConfig
) -> list[Any]:
    """The detectors' points at `at`, from the per-minute sums of the week before it."""
    frame = frame_from_columns(columns, at - WEEK, at)
    return drift_points_from_frame(frame, facts, at, WEEK, config)


def points_at(
    columns: OutcomeColumns, at: float, config: DriftConfig | None, windows: bool
) -> list[QualityPoint]:
    """What the jobs would publish at `at` (simulated seconds)."""
    made: list[Any] = []
    if windows:
        for window in WINDOWS:
            for item in columns.aggregate(at - window.seconds, at, PROPORTIONS, {}):
                made.append((window, item))
    if config is not None:
        made += detector_points(columns, FACTS, at, config)
    return quality_points("benchmark", made, at)


def backfill_file(
    columns: OutcomeColumns, start: float, end: float, step: float, base: float,
    config: DriftConfig | None, windows: bool, path: Path,
) -> int:  # fmt: skip
    writer = OpenMetricsWriter(path, ["tenant"])
    at = start
    while at <= end:
        made = points_at(columns, at, config, windows)
        writer.add(datetime.fromtimestamp(base + at, UTC), made)
        at += step
    writer.close()
    return writer.samples


def false_alarms(
    per_hour: float, step: float, seed: int, baseline: str | None, workdir: Path,
) -> dict[str, tuple[list[Episode], float]]:  # fmt: skip
    """Episodes per rule file (label -> (episodes, seconds evaluated)) on a steady week."""
    columns, n = simulate(per_hour, 14 * 24, seed)
    base = (time.time() // H) * H - 15 * 24 * H  # the simulated fortnight ends a day ago
    start, end = WEEK, 2 * WEEK
    config = drift_config(load_settings())
    shipped = sorted(RULES.glob("*.yml"))
    runs = {"shipped": (shipped, config, True)}
    if baseline is not None:
        old = workdir / "baseline-rules"
        old.mkdir(exist_ok=True)
        for name in ("quality.yml", "operations.yml"):
            text = subprocess.run(
                ["git", "show", f"{baseline}:dashboards/prometheus/rules/{name}"],
                cwd=ROOT, capture_output=True, text=True, check=True,
            ).stdout  # fmt: skip
            (old / name).write_text(text)
        old_files = sorted(old.glob("*.yml"))
        runs = {f"baseline {baseline}": (old_files, None, True), **runs}
    out = {}
    for label, (files, run_config, windows) in runs.items():
        name = "".join(c if c.isalnum() else "_" for c in label)
        data = workdir / f"{name}-{int(per_hour)}"
        began = time.perf_counter()
        samples = backfill_file(
            columns, start, end, step, base, run_config, windows, data.with_suffix(".om")
        )
        made_s = time.perf_counter() - began
        with RulesProm(data.with_suffix(".om"), data, lookback_s=step + 60) as prom:
            episodes = prom.evaluate(files, base + start, base + end)
        print(f"  {per_hour:>6.0f}/h {label}: {n} traces, {samples} samples "
              f"(made in {made_s:.0f} s), {len(episodes)} episodes", flush=True)  # fmt: skip
        out[label] = (episodes, end - start)
    return out


def delay(per_hour: float, drop: Drop, seed: int, config: DriftConfig) -> float | None:
    """Hours from the drop to the first page of that metric and group (None: not in 24h)."""
    columns, _ = simulate(per_hour, drop.at / H + 24, seed, (drop,))
    facts = [f for f in FACTS if f.name == drop.metric]
    group = "" if drop.tenant is None else f"tenant={drop.tenant}"
    at = drop.at + 300.0
    while at <= drop.at + 24 * H:
        for window, item in detector_points(columns, facts, at, config):
            value = item.aggregate.value
            page = window.name == "drift:page" and item.group.key == group
            if page and value is not None and value >= 1.0:
                return (at - drop.at) / H
        at += 300.0
    return None


def best_delay(per_hour: float, drop: Drop, config: DriftConfig) -> float:
    """The yardstick of a hit-rate drop's delay: ln(ARL0) / KL(p1 || p0) traces, the
    first-order asymptotic delay of the optimal detector held to the same false-page budget
    (Lorden 1971), in hours at the ground-truth volume the scope gets. Finite-sample delays
    can be shorter; far longer ones would mean the detector wastes evidence."""
    from benchmarks.alerting_traffic import TENANTS

    page = config.detectors[0]
    shares = {name: (share, hit) for name, share, hit in TENANTS}
    if drop.tenant is None:
        share, p0 = 1.0, sum(s * h for s, h in shares.values())
    else:
        share, p0 = shares[drop.tenant]
    rate = per_hour * 0.5 * share  # half of the traces carry ground truth
    arl = page.series_metrics * (len(TENANTS) + 1) * rate * 168 / page.false_alarms_per_week
    p1 = p0 * (1 - drop.size)
    kl = p1 * math.log(p1 / p0) + (1 - p1) * math.log((1 - p1) / (1 - p0))
    return math.log(arl) / kl / rate


def report_false(results: dict[float, dict[str, tuple[list[Episode], float]]]) -> None:
    print("\n| volume | rules | all alerts / week | pages / week | per rule (episodes / week) |")
    print("| ---: | --- | ---: | ---: | --- |")
    for per_hour, runs in results.items():
        for label, (episodes, seconds) in runs.items():
            weeks = seconds / WEEK
            pages = [e for e in episodes if e.severity == "critical"]
            per_rule: dict[str, int] = {}
            for e in episodes:
                per_rule[e.alert] = per_rule.get(e.alert, 0) + 1
            rules = ", ".join(f"{a} {c / weeks:.0f}" for a, c in sorted(per_rule.items())) or "-"
            print(
                f"| {per_hour:.0f}/h | {label} | {len(family_episodes(episodes)) / weeks:.1f} "
                f"| {len(family_episodes(pages)) / weeks:.1f} | {rules} |"
            )


def delay_cells(
    per_hour: float, metric: str, tenant: str | None, args: argparse.Namespace,
    config: DriftConfig,
) -> list[str]:  # fmt: skip
    """One row of the delay table: the median delay per drop size (and the yardstick)."""
    cells = []
    for size in args.drops:
        drop = Drop(metric, size, 8 * 24 * H, tenant)
        found = [delay(per_hour, drop, args.seed + s, config) for s in range(args.seeds)]
        middle = statistics.median([math.inf if d is None else d for d in found])
        bound = best_delay(per_hour, drop, config) if metric == "hit_rate@1" else None
        cell = f"{middle:.2f}" if math.isfinite(middle) else "-"
        cells.append(cell if bound is None else f"{cell} ({bound:.2f})")
    return cells


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--volumes", type=float, nargs="+", default=[120, 1200, 12000])
    parser.add_argument("--baseline", default=None, help="git revision of the rules to compare")
    parser.add_argument("--drops", type=float, nargs="+", default=[0.05, 0.10, 0.20, 0.40])
    parser.add_argument("--delay-volumes", type=float, nargs="+", default=[1200])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip-false", action="store_true", help="only the delays")
    parser.add_argument(
        "--delay-metrics", nargs="+", default=["hit_rate@1", "faithfulness"],
        choices=["hit_rate@1", "faithfulness"], help="the drops whose delays are measured",
    )  # fmt: skip
    args = parser.parse_args(argv)
    config = drift_config(load_settings())
    if config is None:
        raise SystemExit("alerting is disabled in the settings")
    results: dict[float, dict[str, tuple[list[Episode], float]]] = {}
    if not args.skip_false:
        with tempfile.TemporaryDirectory() as tmp:
            for per_hour in args.volumes:
                step = 600.0 if per_hour <= 2000 else 3600.0
                results[per_hour] = false_alarms(
                    per_hour, step, args.seed, args.baseline, Path(tmp)
                )
        report_false(results)
    print("\nDetection delay (hours to the first page, median of "
          f"{args.seeds} runs; '-': not paged within 24 h)\n")  # fmt: skip
    print("| volume | metric | scope | "
          + " | ".join(f"-{d:.0%}" for d in args.drops) + " |")  # fmt: skip
    print("| ---: | --- | --- |" + " ---: |" * len(args.drops))
    scopes = {"hit_rate@1": ("acme", "globex", "initech", None), "faithfulness": ("globex", None)}
    scopes = {m: t for m, t in scopes.items() if m in args.delay_metrics}
    for per_hour in args.delay_volumes:
        for metric, tenants in scopes.items():
            for tenant in tenants:
                cells = delay_cells(per_hour, metric, tenant, args, config)
                scope = f"tenant {tenant}" if tenant else "overall"
                print(f"| {per_hour:.0f}/h | {metric} | {scope} | "
                      + " | ".join(cells) + " |", flush=True)  # fmt: skip
    print(
        "\n(in brackets: ln(ARL0) / KL hours, the first-order asymptotic delay of the optimal "
        "detector at the same false-page budget (Lorden 1971); a yardstick, not a floor)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
