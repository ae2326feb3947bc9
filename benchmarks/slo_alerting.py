"""SLO burn-rate alerting benchmark (issue 32): the generated rules, evaluated by a real
Prometheus, in the SRE Workbook's terms (precision, recall, detection and reset time).

Traffic (`benchmarks.slo_traffic`): at each `--volumes` rate (traces an hour, 5% judged:
one SLI event per judged trace, a daily cycle with night a quarter of the day), per SLO of
`examples/slo.yaml` that `--slos` names (default faithfulness, a 95% target, and
judge-calls, 99%), `--seeds` steady runs and, per burn factor (1x, 2x, 6x, 14.4x, 36x: the
workbook's table; those whose error ratio would pass 1 are skipped), `--seeds` burn runs:
ten days of counters scraped once a minute, the error ratio half the budget, except that a
burn run burns at factor x budget for `--burn-hours` from day 5 plus a random hour.

Evaluation, as the rule manager does it: `promtool tsdb create-blocks-from openmetrics`
loads the counters into a real Prometheus, which evaluates every recording rule that reads
the counters (`increase` over each window) once a minute over the last seven days
(`query_range`); their results, back-filled into a second Prometheus, are what the rule
manager would have recorded. Each method's alert expressions (their derived recording
rules, ratios and bounds, inlined) are then evaluated there once a minute and `for:`
applied (`benchmarks.alerting_rules`).

Per method (`METHODS`: the rules `dashboards/slo_rules.py` generates with each
confidence), SLO and volume: false pages (and tickets) a week (episodes that start on steady
traffic: the steady runs and each burn run before its burn), precision (pages that start
during a burn of at least the smallest page factor, tickets during any burn, over all),
and per burn factor: recall (burns paged before they ended), the median detection time
(burn start to first page) and the median reset time (burn end to the alert's end), and
per burn its alert episodes (a burn should be one page: issue 39) and the share of it,
from the first alert on, that the alert fired. `keep_firing_for` is applied as the rule
manager does; `--step 60` evaluates every minute as it does (the default 5 minutes is
cheaper and hides returns shorter than a step).

Run: `.venv/bin/python -m benchmarks.slo_alerting [--volumes 120 1200 12000] [--seeds 3]
[--step 60] [--methods ...]` (Prometheus and promtool from the Debian package `prometheus`).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.alerting_rules import Episode, RulesProm, episodes_of, family_episodes
from benchmarks.slo_traffic import DAY, MINUTE, H, Run, write_counters, write_recorded
from collector.settings import SloSpec, parse_duration
from collector.settings.openslo import load_openslo
from collector.settings.severity import CRITICAL, WARNING
from dashboards import boards, slo_rules

FACTORS = (1.0, 2.0, 6.0, 14.4, 36.0)
WEEK = 7 * DAY


@dataclass(frozen=True)
class Timeline:
    """Seconds simulated, evaluated from `warmup` (once the longest alert window, 3d, is
    full of history) to the end; burns start at `burn_from` plus a random hour of the
    next `hours` (any time of day: day or night volume)."""

    length: float = 10 * DAY
    warmup: float = 3 * DAY
    burn_from: float = 5 * DAY
    hours: int = 24


DEFAULT = Timeline()
STEP = 300.0
"""Rules evaluated every 5 minutes (the shortest window): a 1-minute rule interval would
cost five times the time for detection times 4 minutes finer."""


def _rules(
    method: slo_rules.Method, z: float, hold: slo_rules.Hold = slo_rules.HOLD
) -> Callable[[SloSpec], list[dict[str, Any]]]:
    return lambda spec: list(
        slo_rules.rules([spec], z, method=method, hold=hold)["groups"][0]["rules"]
    )


def _keep(page: str, ticket: str = "") -> slo_rules.Hold:
    names = ("RagpulseSloFastBurn", page), ("RagpulseSloSlowBurn", ticket)
    return slo_rules.Hold(tuple((name, keep) for name, keep in names if keep))


METHODS = {
    "workbook (point estimate)": _rules("wilson", 0.0, _keep("")),
    "Wilson 99% (before issue 32)": _rules("wilson", 2.326, _keep("")),
    "Wilson 90%": _rules("wilson", 1.282, _keep("")),
    "min-count (before issue 39)": _rules("min-count", 0.0, _keep("")),
    "min-count, keep 30m": _rules("min-count", 0.0, _keep("30m")),
    "min-count, keep 1h": _rules("min-count", 0.0, _keep("1h")),
    "min-count, keep 1h, ticket 2h": _rules("min-count", 0.0, _keep("1h", "2h")),
    "min-count, keep 90m, ticket 2h (shipped)": _rules("min-count", 0.0),
    "min-count, keep 2h, ticket 2h": _rules("min-count", 0.0, _keep("2h", "2h")),
    "min-count, keep 1h, ticket 6h": _rules("min-count", 0.0, _keep("1h", "6h")),
}
RAW = "ragpulse_slo_events_total"
NAME = re.compile(r'(ragpulse_slo:[a-z_]+:[a-z]+\w*)\{slo="[^"]*"\}')


@dataclass(frozen=True)
class Burn:
    """One burn's alert of the severity its factor calls for: hours from its start to the
    first alert (None: none during the burn), from its end to the alert's end, the
    separate firing episodes it caused, and the share of the burn from the first alert
    to its end the alert fired."""

    detect: float | None
    reset: float | None
    episodes: int
    held: float | None
    spans: tuple[tuple[float, float], ...] = ()


@dataclass
class Outcome:
    """One method's episodes on one SLO's runs."""

    runs: list[Run]
    pages: dict[str, list[tuple[float, float]]]
    tickets: dict[str, list[tuple[float, float]]]
    when: Timeline


def plan(
    spec: SloSpec, seeds: int, burn_hours: float, rng: np.random.Generator, when: Timeline,
    factors: Sequence[float] = FACTORS,
) -> list[Run]:  # fmt: skip
    runs = [Run(f"steady-{s}", 0.0) for s in range(seeds)]
    for factor in factors:
        if factor * spec.budget >= 1.0:
            continue
        for s in range(seeds):
            start = when.burn_from + float(rng.integers(0, when.hours)) * H
            runs.append(Run(f"burn{factor:g}-{s}", factor, start, start + burn_hours * H))
    return runs


def inline(expr: str, derived: dict[str, str]) -> str:
    """`expr` with every derived recording rule's name replaced by its expression."""
    while True:
        done = NAME.sub(
            lambda m: f"({derived[m.group(1)]})" if m.group(1) in derived else m.group(0), expr
        )
        if done == expr:
            return done
        expr = done


def evaluate(
    specs: Sequence[SloSpec], per_hour: float, seeds: int, burn_hours: float, seed: int,
    workdir: Path, when: Timeline = DEFAULT, factors: Sequence[float] = FACTORS,
    step: float = STEP, methods: Sequence[str] | None = None,
) -> dict[tuple[str, str], Outcome]:  # fmt: skip
    """Every method's page and ticket episodes per (method, SLO), rules evaluated every
    `step` seconds."""
    rng = np.random.default_rng(seed)
    runs = {s.name: plan(s, seeds, burn_hours, rng, when, factors) for s in specs}
    base = (time.time() // DAY) * DAY - when.length - DAY
    start, end = base + when.warmup, base + when.length - MINUTE
    minutes = int(when.length / MINUTE)
    counters = workdir / f"counters-{per_hour:g}.om"
    slos = [(s.name, s.budget, runs[s.name]) for s in specs]
    write_counters(counters, slos, per_hour, minutes, base, seed)
    recorded: dict[str, list[dict[str, Any]]] = {}
    clock = time.monotonic()
    with RulesProm(counters, workdir / f"raw-{per_hour:g}", lookback_s=5 * MINUTE) as prom:
        for spec in specs:
            for rule in slo_rules.recording_rules(spec):
                if RAW in rule["expr"] and not rule["record"].endswith("period"):
                    result = prom.query_range(rule["expr"], start, end, step)
                    recorded.setdefault(rule["record"], []).extend(result)
    stored = workdir / f"recorded-{per_hour:g}.om"
    samples = write_recorded(stored, recorded.items())
    print(f"  {per_hour:>6.0f}/h: recorded {samples} samples in "
          f"{time.monotonic() - clock:.0f} s", flush=True)  # fmt: skip
    out: dict[tuple[str, str], Outcome] = {}
    with RulesProm(stored, workdir / f"rec-{per_hour:g}", lookback_s=step + MINUTE) as prom:
        for method in methods or list(METHODS):
            make = METHODS[method]
            for spec in specs:
                rules = make(spec)
                derived = {r["record"]: r["expr"] for r in rules if "record" in r}
                derived = {k: v for k, v in derived.items() if RAW not in v}
                found: dict[str, dict[str, list[tuple[float, float]]]] = {}
                for rule in (r for r in rules if "alert" in r):
                    severity = rule["labels"]["severity"]
                    expr = inline(rule["expr"], derived)
                    episodes = _episodes(prom, rule, expr, start, end, step)
                    by_tenant = found.setdefault(severity, {})
                    for e in episodes:
                        tenant = dict(e.labels).get("tenant", "")
                        by_tenant.setdefault(tenant, []).append((e.start - base, e.end - base))
                out[(method, spec.name)] = Outcome(
                    runs[spec.name], found.get(CRITICAL, {}), found.get(WARNING, {}), when
                )
    print(f"  {per_hour:>6.0f}/h: evaluated in {time.monotonic() - clock:.0f} s", flush=True)
    return out


def _episodes(
    prom: RulesProm, rule: dict[str, Any], expr: str, start: float, end: float, step: float
) -> list[Episode]:
    hold = parse_duration(rule["for"]) if rule.get("for") else 0.0
    keep = parse_duration(rule["keep_firing_for"]) if rule.get("keep_firing_for") else 0.0
    severity = rule["labels"]["severity"]
    out = []
    for series in prom.query_range(expr, start, end, step):
        labels = tuple(sorted(series["metric"].items()))
        times = [float(t) for t, _ in series["values"]]
        out += episodes_of(rule["alert"], severity, labels, times, start, end, hold, keep, step)
    return out


def _merged(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    episodes = [Episode("", "", (), a, b) for a, b in spans]
    return family_episodes(episodes)


def burn_of(run: Run, spans: list[tuple[float, float]], after: float) -> Burn:
    """A burn's alert episodes (merged `spans` of its tenant): those that start during the
    burn or within `after` seconds of its end (while the long windows still hold it) are
    its own."""
    alerts = [(a, b) for a, b in spans if run.start <= a < run.end + after]
    first = next((a for a, _ in alerts if a < run.end), None)
    hours = tuple(((a - run.start) / H, (b - run.start) / H) for a, b in alerts)
    if first is None:
        return Burn(None, None, len(alerts), None, hours)
    last = max(b for _, b in alerts)
    fired = sum(min(b, run.end) - max(a, first) for a, b in alerts if a < run.end)
    held = fired / (run.end - first) if run.end > first else 1.0
    reset = max(last - run.end, 0.0) / H
    return Burn((first - run.start) / H, reset, len(alerts), held, hours)


def summary(outcome: Outcome, page_factor: float, after: dict[str, float]) -> dict[str, Any]:
    """False alarms a week, precision, and per factor each burn's `Burn`; `after` is per
    severity how long after a burn an alert that starts is still the burn's (its longest
    long window)."""
    steady_s = 0.0
    false = {"page": 0, "ticket": 0}
    true = {"page": 0, "ticket": 0}
    per_factor: dict[float, list[Burn]] = {}
    for run in outcome.runs:
        steady_s += min(run.start, outcome.when.length) - outcome.when.warmup
        for severity, found in (("page", outcome.pages), ("ticket", outcome.tickets)):
            for a, _ in _merged(found.get(run.tenant, [])):
                if a < run.start:
                    false[severity] += 1
                elif severity == "ticket" or run.factor >= page_factor:
                    true[severity] += 1
                else:
                    false[severity] += 1
        if run.factor:
            # a burn at a page factor should page; a slower one should open a ticket
            severity = "page" if run.factor >= page_factor else "ticket"
            found = outcome.pages if severity == "page" else outcome.tickets
            burn = burn_of(run, _merged(found.get(run.tenant, [])), after.get(severity, 0.0))
            per_factor.setdefault(run.factor, []).append(burn)
    weeks = steady_s / WEEK
    return {
        "false": {k: v / weeks for k, v in false.items()},
        "precision": {
            k: (true[k] / (true[k] + false[k]) if true[k] + false[k] else None) for k in true
        },
        "factors": per_factor,
    }


def _median(values: list[float | None]) -> str:
    found = [v for v in values if v is not None]
    return f"{statistics.median(found):.2f}" if found else "-"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def after_burn(spec: SloSpec) -> dict[str, float]:
    """Per severity, its longest long window: how long after a burn an alert that starts
    is still the burn's."""
    out: dict[str, float] = {}
    for a in spec.alerts:
        out[a.severity] = max(out.get(a.severity, 0.0), parse_duration(a.long_window))
    return out


def report(
    results: dict[float, dict[tuple[str, str], Outcome]],
    specs: Sequence[SloSpec],
    factors: Sequence[float] = FACTORS,
) -> None:
    header = " | ".join(f"{f:g}x" for f in factors)
    print("\nPer burn factor: burns alerted / burns, median hours from the burn's start to the "
          "alert, median hours from its end to the alert's end; a page for factors from the "
          "smallest page factor (6x) up, a ticket below ('-': never; 'n/a': an error ratio "
          "above 1)\n")  # fmt: skip
    print(f"| SLO | volume | method | false pages/wk | false tickets/wk | page precision | "
          f"ticket precision | {header} |")  # fmt: skip
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: |" + " --- |" * len(factors))
    details = []
    holds = []
    for spec in specs:
        page_factor = min(a.factor for a in spec.alerts if a.severity == "page")
        after = after_burn(spec)
        for per_hour, outcomes in results.items():
            for method in (m for m in METHODS if (m, spec.name) in outcomes):
                s = summary(outcomes[(method, spec.name)], page_factor, after)
                cells, held = [], []
                for factor in factors:
                    runs: list[Burn] | None = s["factors"].get(factor)
                    if runs is None:
                        cells.append("n/a")
                        held.append("n/a")
                        continue
                    paged = sum(b.detect is not None for b in runs)
                    detect = _median([b.detect for b in runs])
                    reset = _median([b.reset for b in runs])
                    cells.append(f"{paged}/{len(runs)} {detect} / {reset}")
                    episodes = " ".join(str(b.episodes) for b in runs)
                    held.append(f"{episodes} ({_pct(_mean([b.held for b in runs]))})")
                    times = sorted(b.detect for b in runs if b.detect is not None)
                    within = sum(t <= 1.0 for t in times)
                    details.append(
                        f"{spec.name} {per_hour:g}/h {method} {factor:g}x: alerted within 1 h "
                        f"{within}/{len(runs)}; hours to alert "
                        + ", ".join(f"{t:.2f}" for t in times)
                        + "; hours from the end to the reset "
                        + ", ".join("-" if b.reset is None else f"{b.reset:.2f}" for b in runs)
                        + "; episodes, hours from the burn's start: "
                        + ", ".join(
                            "[" + " ".join(f"{a:.2f}-{b:.2f}" for a, b in x.spans) + "]"
                            for x in runs
                        )
                    )
                row = f"| {spec.name} {spec.target:.3g} | {per_hour:g}/h | {method} | "
                print(row + f"{s['false']['page']:.2f} | {s['false']['ticket']:.2f} | "
                      f"{_pct(s['precision']['page'])} | {_pct(s['precision']['ticket'])} | "
                      + " | ".join(cells) + " |", flush=True)  # fmt: skip
                holds.append(row + " | ".join(held) + " |")
    print("\nPer burn factor: each burn's alert episodes (target 1; 0: never alerted), and "
          "(mean) the share of the burn from its first alert on that it fired\n")  # fmt: skip
    print(f"| SLO | volume | method | {header} |")
    print("| --- | ---: | --- |" + " --- |" * len(factors))
    print("\n".join(holds))
    print("\nEvery burn's detection and reset time:\n")
    print("\n".join(details))


def _mean(values: list[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return sum(found) / len(found) if found else None


def with_page_factor(spec: SloSpec, factor: float) -> SloSpec:
    """`spec` with its 1-hour page alert at burn rate `factor` (what a team sets in its
    OpenSLO AlertCondition when a burn of exactly 14.4x must page within the hour)."""
    alerts = tuple(
        dataclasses.replace(a, factor=factor)
        if a.severity == "page" and a.long_window == "1h"
        else a
        for a in spec.alerts
    )
    return dataclasses.replace(spec, alerts=alerts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--volumes", type=float, nargs="+", default=[120, 1200, 12000])
    parser.add_argument("--slos", nargs="+", default=["faithfulness", "judge-calls"])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--burn-hours", type=float, default=48.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--factors", type=float, nargs="+", default=list(FACTORS), help="burn factors to run"
    )
    parser.add_argument("--step", type=float, default=STEP, help="seconds between rule evaluations")
    parser.add_argument(
        "--methods", nargs="+", choices=list(METHODS), help="rule variants (default: all)"
    )
    parser.add_argument(
        "--page-factor",
        type=float,
        help="the 1h page alert's burn rate instead of the example's (the workbook's 14.4)",
    )
    args = parser.parse_args(argv)
    specs = [s for s in load_openslo(boards.SLO_EXAMPLE) if s.name in args.slos]
    if args.page_factor is not None:
        specs = [with_page_factor(s, args.page_factor) for s in specs]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for per_hour in args.volumes:
            results[per_hour] = evaluate(
                specs, per_hour, args.seeds, args.burn_hours, args.seed, Path(tmp),
                factors=args.factors, step=args.step, methods=args.methods,
            )  # fmt: skip
    report(results, specs, args.factors)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
