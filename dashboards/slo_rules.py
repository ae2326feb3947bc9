"""Prometheus rules for quality SLOs: error ratios, budget, burn rates and burn alerts.

From each `SloSpec` (`collector/settings/slo_spec.py`), over `ragpulse_slo_events_total`
(`exporters/slo.py`), per SLO and tenant:
- recording rules for every window its alerts use (the workbook's 5m, 30m, 1h, 2h, 6h, 1d,
  3d by default) and its own window (`period`): `ragpulse_slo:events:increase<w>`,
  `ragpulse_slo:bad_events:increase<w>`, `ragpulse_slo:error_ratio:rate<w>` and
  `ragpulse_slo:burn_rate:rate<w>` (error ratio / budget), plus
  `ragpulse_slo:error_budget_remaining` (1 - the period's error ratio / budget; below 0:
  overspent);
- multi-window multi-burn-rate alerts (SRE Workbook, "Alerting on SLOs"):
  `RagpulseSloFastBurn` (the SLO's `page` conditions) and `RagpulseSloSlowBurn` (its
  `ticket` conditions), each the `or` of its conditions, labelled with the severity every
  ragpulse rule uses (`critical`: pages, `warning`: a ticket; `collector/settings/
  severity.py`) and with the SLI's `metric` and its `tier` (`quality_rules.tier`), so
  Alertmanager groups a burn with the quality alerts of the same tier and the report
  counts it on that tier.

Confidence (why not the workbook's condition as is): judge metrics are scored on a sample
(5% by default), so a 5-minute window may hold three events and a 1-hour window a dozen;
the point estimate `bad / events` then crosses `factor x budget` by chance (two bad events
of two read as a burn of 20x a 95% SLO). A condition here also needs the long window to
hold at least `min_bad_events(factor, budget)` bad events: the fewest that, with the
ratio above the threshold, a window within budget shows with probability at most `ALPHA`
(0.1%), exactly (binomial), whatever the window's count (3 bad events for a 95% SLO's
14.4x over 1h, 5 for 6x over 6h, 11 for 3x over 1d, 4, 6 and 12 for a 99% SLO; none for
1x, whose 3-day window holds hundreds of events). Where events are plentiful this is the
workbook's rule; where they are sparse, chance cannot page.
Why not the lower confidence bound of the error ratio above the threshold (`method=
"wilson"`, shipped before): it asks for proof that the burn is *at least* `factor`x, so a
burn of exactly 14.4x is paged only when the 6h condition proves 6x (after 3.6 h at
1,200 traces/h), and Wilson's bound is too high for a handful of events (one bad of one
is above a 99% SLO's 0.144), so it still pages falsely at 120/h. The benchmark
(`benchmarks/slo_alerting.py`, issue 32) measured both, a 90% bound and the workbook's
point estimate: only the minimum count has no false page a week at any volume and the
workbook's detection times where the volume allows them.
The short window keeps its workbook role, resetting the alert once the burn stops: its
point estimate above the threshold, or no event in it at all (a sampled SLI's quiet 5
minutes must not hide a burn the long window established).

A burn is one page: `RagpulseSloFastBurn` keeps firing for 90m after its condition last
held, `RagpulseSloSlowBurn` for 2h (`KEEP`). With sampled scores the 5-minute window
holds ~5 events at 1,200 traces/h and a burn at the workbook's 14.4x keeps the 1-hour
ratio on its threshold, so the condition comes and goes during a burn (4-9 pages per
burn measured at 1,200/h); 90m bridges the dips of the 1-hour ratio under its threshold
until the 6-hour condition holds (every burn one page at 1,200 and 12,000/h; 1h left 3 of
20 paged twice). Cost: the page resolves about 1.8 h after the burn ends. Detection is
unchanged. Measured against 30m and 1h (quicker resets, more burns paged twice), 2h
(nothing more merged) and a short window that resets only on
evidence (its upper confidence bound under the threshold: a 99% SLO's 30-minute window
never holds the events to show a ratio under 6x its budget, so pages stayed up for
hours): see `benchmarks/RESULTS.md`. The ticket's 6-hour window dips at night (a quarter
of the day's events): a 2x burn over two days opened 1 to 9 tickets; 2h makes it one
(6h no better), its reset 2 h later.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import yaml
from scipy.stats import binom

from collector.settings import SloSpec, parse_duration
from collector.settings.severity import rule_severity
from dashboards.quality_rules import tier
from dashboards.runbooks import DOCS_URL, runbook_url

Z = 2.326
"""One-sided 99% normal quantile of the Wilson lower bound (`method="wilson"`)."""
ALPHA = 1e-3
"""The chance that a window within budget still shows the minimum count of bad events with
an error ratio above a condition's threshold (`method="min-count"`)."""
Method = Literal["min-count", "wilson"]


@dataclass(frozen=True)
class Hold:
    """The burn alerts' `keep_firing_for`, per alert name: `KEEP` (None), or others (the
    benchmark's variants; an alert not named is not held)."""

    keep: tuple[tuple[str, str], ...] | None = None


HOLD = Hold()

EVENTS = "ragpulse_slo_events_total"
BY = "sum by (slo, tenant)"
ALERTS = {"page": "RagpulseSloFastBurn", "ticket": "RagpulseSloSlowBurn"}
"""The alert of each of an SLO's severity words (`SloSpec`'s; the label is `rule_severity`)."""
KEEP = (("RagpulseSloFastBurn", "90m"), ("RagpulseSloSlowBurn", "2h"))
"""The burn alerts' `keep_firing_for`: a burn is one page (see the module's doc)."""
TENANT = "{{ if $labels.tenant }} for tenant {{ $labels.tenant }}{{ end }}"

HEADER = """\
# GENERATED by dashboards/build.py (dashboards/slo_rules.py) from examples/slo.yaml (OpenSLO):
# edit the SLOs and run `python dashboards/build.py`.
# Burn alerts need the long window's error ratio above the burn threshold with at least
# the bad events that tell a burn from chance (sampled scores); see slo_rules.py.
"""


def windows(spec: SloSpec) -> list[str]:
    """Every window the SLO's alerts read, shortest first."""
    found = {w for a in spec.alerts for w in (a.long_window, a.short_window)}
    return sorted(found, key=parse_duration)


def _sel(spec: SloSpec, bad: bool = False) -> str:
    outcome = ',outcome="bad"' if bad else ""
    return f'{EVENTS}{{slo="{spec.name}"{outcome}}}'


def _num(value: float) -> str:
    return f"{value:.6g}"


def recording_rules(spec: SloSpec, z: float = Z, bound: bool = False) -> list[dict[str, Any]]:
    """The SLO's ratios per window and its budget remaining; with `bound`, the Wilson lower
    bounds of the long windows' error ratios (`method="wilson"`)."""
    out: list[dict[str, Any]] = []
    slo = f'{{slo="{spec.name}"}}'
    for w in [*windows(spec), "period"]:
        rng = spec.window if w == "period" else w
        suffix = w
        out += [
            {
                "record": f"ragpulse_slo:events:increase{suffix}",
                "expr": f"{BY} (increase({_sel(spec)}[{rng}]))",
            },
            {
                "record": f"ragpulse_slo:bad_events:increase{suffix}",
                "expr": f"{BY} (increase({_sel(spec, bad=True)}[{rng}]))",
            },
            {
                "record": f"ragpulse_slo:error_ratio:rate{suffix}",
                "expr": f"ragpulse_slo:bad_events:increase{suffix}{slo} "
                f"/ ragpulse_slo:events:increase{suffix}{slo}",
            },
            {
                "record": f"ragpulse_slo:burn_rate:rate{suffix}",
                "expr": f"ragpulse_slo:error_ratio:rate{suffix}{slo} / {_num(spec.budget)}",
            },
        ]
    for w in sorted({a.long_window for a in spec.alerts}, key=parse_duration) if bound else []:
        out.append(
            {
                "record": f"ragpulse_slo:error_ratio_lower:rate{w}",
                "expr": wilson_lower(
                    f"ragpulse_slo:error_ratio:rate{w}{slo}",
                    f"ragpulse_slo:events:increase{w}{slo}",
                    z,
                ),
            }
        )
    out.append(
        {
            "record": "ragpulse_slo:error_budget_remaining",
            "expr": f"1 - ragpulse_slo:error_ratio:rateperiod{slo} / {_num(spec.budget)}",
        }
    )
    return out


def wilson_lower(p: str, n: str, z: float = Z) -> str:
    """PromQL of the Wilson score interval's lower bound of a proportion `p` of `n` events:
    (p + z²/2n - z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)."""
    z2 = _num(z * z)
    return (
        f"({p} + {_num(z * z / 2)} / {n} - {_num(z)} * sqrt(clamp_min({p} * (1 - {p}) / {n} "
        f"+ {_num(z * z / 4)} / ({n} * {n}), 0))) / (1 + {z2} / {n})"
    )


@lru_cache(maxsize=256)
def min_bad_events(factor: float, budget: float, alpha: float = ALPHA) -> int:
    """The fewest bad events in a long window that, with its error ratio above `factor` x
    `budget`, are evidence at level `alpha` that the budget burns at all: the smallest k
    for which P(Binomial(n, budget) >= k) <= `alpha`, n the most events whose k bad are
    still above the threshold. 1 (no minimum) when no k up to 200 gets there: for a
    factor near 1 a ratio just above the threshold is no evidence against the budget, and
    the slow conditions' windows hold days of events anyway."""
    threshold = factor * budget
    for k in range(1, 201):
        n = math.ceil(k / threshold) - 1
        if float(binom.sf(k - 1, n, budget)) <= alpha:
            return k
    return 1


def alert_rules(
    spec: SloSpec, docs_url: str = DOCS_URL, method: Method = "min-count", hold: Hold = HOLD
) -> list[dict[str, Any]]:
    """One alert per severity the SLO declares, the `or` of its conditions."""
    slo = f'{{slo="{spec.name}"}}'
    out = []
    for severity, name in ALERTS.items():
        conditions = [a for a in spec.alerts if a.severity == severity]
        if not conditions:
            continue
        parts = []
        for a in conditions:
            threshold = _num(a.factor * spec.budget)
            short = (
                f"(ragpulse_slo:error_ratio:rate{a.short_window}{slo} > {threshold} "
                f"or on (slo, tenant) ragpulse_slo:events:increase{a.short_window}{slo} == 0)"
            )
            if method == "wilson":
                long = f"ragpulse_slo:error_ratio_lower:rate{a.long_window}{slo} > {threshold}"
            else:
                least = min_bad_events(a.factor, spec.budget)
                long = (
                    f"ragpulse_slo:error_ratio:rate{a.long_window}{slo} > {threshold} and on "
                    f"(slo, tenant) ragpulse_slo:bad_events:increase{a.long_window}{slo} "
                    f">= {least}"
                )
            parts.append(f"({long} and on (slo, tenant) {short})")
        listed = " or ".join(f"{_num(a.factor)}x over {a.long_window}" for a in conditions)
        since = conditions[0].long_window
        keep = dict(KEEP if hold.keep is None else hold.keep).get(name, "")
        out.append(
            {
                "alert": name,
                "expr": " or ".join(parts),
                **({"keep_firing_for": keep} if keep else {}),
                "labels": labels(spec, severity),
                "annotations": {
                    "summary": (f"SLO {spec.name} burns its error budget {listed}" + TENANT),
                    "description": (
                        f"{spec.description or spec.name} ({spec.metric}, target "
                        f"{spec.target:.4g} over {spec.window}). The error ratio shows a burn "
                        f"rate above {listed} (budget {spec.budget:.4g}), on enough bad "
                        "events to tell it from chance. The SLO dashboard shows the budget "
                        "left; the "
                        "worst traces: "
                        f"`ragpulse traces --metric {spec.metric} --since {since}"
                        + "{{ if $labels.tenant }} --tenant {{ $labels.tenant }}{{ end }}`."
                    ),
                    "runbook_url": runbook_url(name, docs_url),
                },
            }
        )
    return out


def labels(spec: SloSpec, severity: str) -> dict[str, str]:
    """The burn alert's labels: the rule severity of the SLO's word (`page` -> critical,
    `ticket` -> warning), the SLO, and the SLI's metric and tier (what the report and
    Alertmanager's `group_by: [severity, tenant, tier]` read)."""
    return {
        "severity": rule_severity(severity),
        "slo": spec.name,
        "metric": spec.metric,
        "tier": tier(spec.metric),
    }


def rules(
    specs: Sequence[SloSpec], z: float = Z, docs_url: str = DOCS_URL,
    method: Method = "min-count", hold: Hold = HOLD,
) -> dict[str, Any]:  # fmt: skip
    """One rule group per SLO: its recording rules (labelled with the SLO, which the series
    carry anyway, so promtool sees no duplicates), then its alerts. One group, because a
    group's rules run in order at one timestamp: the alerts read this evaluation's ratios.
    (Across groups Prometheus gives no order, and a ratio recorded one 10-minute step
    earlier is past the 5-minute look-back.)"""
    groups = []
    for spec in specs:
        made = recording_rules(spec, z, bound=method == "wilson")
        recorded = [{**r, "labels": {"slo": spec.name}} for r in made]
        alerts = alert_rules(spec, docs_url, method, hold)
        groups.append({"name": f"ragpulse-slo-{spec.name}", "rules": [*recorded, *alerts]})
    return {"groups": groups}


def file_name(spec: SloSpec) -> str:
    """The shipped rules file of one SLO."""
    return f"slo-{spec.name}.yml"


def render(
    specs: Sequence[SloSpec], z: float = Z, docs_url: str = DOCS_URL,
    method: Method = "min-count", hold: Hold = HOLD,
) -> str:  # fmt: skip
    """The rules file; with `method="wilson"`, `z` = 0 makes the bound the point estimate
    (the workbook's rule); each alert's `runbook_url` under the site at `docs_url`."""
    body = yaml.safe_dump(
        rules(specs, z, docs_url, method, hold), sort_keys=False, allow_unicode=True, width=10_000
    )
    return HEADER + body
