"""The report's verdict per tier: fine, watch or paging, and why — a pure function over
values already fetched from Prometheus (`verdict_data` fetches them).

A tier (a row of the overview dashboard: retrieval, generation, judges, UX, embeddings)
is
- **paging** when a critical alert (a page: a quality drop, an SLO's fast burn, ...) on
  one of its metrics fires,
- **watch** when a warning alert (a ticket) fires, a drift detector is at or past its threshold
  (score >= 1), the last hour's 95% CI lies wholly on the bad side of the 7-day value, or
  the last hour's value is in a bad seed band (the panel's red thresholds),
- **fine** when it has values and none of that holds,
- **no data** when none of its metrics has a value (the row's condition says why).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from collector.settings.severity import is_page

LEVELS = ("no data", "fine", "watch", "paging")
"""From least to most urgent; a tier's level is the most urgent of its reasons."""


@dataclass(frozen=True)
class Reading:
    """One metric's overall values now (None: Prometheus has none)."""

    metric: str
    direction: str
    """higher, lower or none (a size: never worse)."""
    hour: float | None = None
    hour_low: float | None = None
    hour_high: float | None = None
    week: float | None = None
    drift: float | None = None
    """The largest drift score over the detectors (1 = alarm)."""
    bad_band: bool = False
    """The last hour's value is in a seed band that needs attention."""
    worse_since: float | None = None
    """Since when (epoch s) the 1h value has been on the bad side of the 7d value."""

    @property
    def delta(self) -> float | None:
        return None if self.hour is None or self.week is None else self.hour - self.week

    @property
    def ci_worse(self) -> bool:
        """The 1h CI lies wholly on the bad side of the 7d value (by more than rounding:
        on a young series both windows hold the same samples)."""
        if self.week is None:
            return False
        slack = 1e-9 * max(1.0, abs(self.week))
        if self.direction == "higher":
            return self.hour_high is not None and self.hour_high < self.week - slack
        if self.direction == "lower":
            return self.hour_low is not None and self.hour_low > self.week + slack
        return False


@dataclass(frozen=True)
class FiringAlert:
    """An alert firing at the report's time, or (`until` set) one that fired in its range
    and had resolved by its end (`exporters/report/firing.py`)."""

    name: str
    severity: str
    metric: str | None
    tenant: str | None
    summary: str
    description: str
    runbook_url: str | None = None
    since: float | None = None
    until: float | None = None
    """When a resolved alert last fired (epoch s); None while it fires."""

    @property
    def firing(self) -> bool:
        return self.until is None


@dataclass(frozen=True)
class TopSlice:
    """`ragpulse_change_attribution{rank="1"}`: the slice carrying most of a change."""

    metric: str
    slice: str
    share: float


@dataclass(frozen=True)
class Tier:
    title: str
    metrics: tuple[str, ...]
    empty_reason: str | None = None
    anchor: str = ""


@dataclass(frozen=True)
class Finding:
    """A metric of the tier that is not fine, and the reasons (shortest first)."""

    reading: Reading
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class TierVerdict:
    tier: Tier
    level: str
    findings: tuple[Finding, ...] = ()
    alerts: tuple[FiringAlert, ...] = ()
    slices: tuple[TopSlice, ...] = ()
    with_data: int = 0
    """How many of the tier's metrics have a 1h value."""


def _rank(level: str) -> int:
    return LEVELS.index(level)


def _reasons(reading: Reading) -> tuple[str, ...]:
    reasons = []
    if reading.drift is not None and reading.drift >= 1:
        reasons.append(f"drift detector at {reading.drift:.1f}× its threshold")
    if reading.ci_worse:
        reasons.append("1h 95% CI wholly worse than 7d")
    if reading.bad_band:
        reasons.append("1h value in a band that needs attention")
    return tuple(reasons)


def judge(
    tier: Tier,
    readings: Mapping[str, Reading],
    alerts: Sequence[FiringAlert],
    slices: Sequence[TopSlice],
) -> TierVerdict:
    """The verdict of one tier from its metrics' readings, the firing alerts on its
    metrics and the top slices of its changes."""
    mine = set(tier.metrics)
    own_alerts = tuple(a for a in alerts if a.firing and a.metric in mine)
    with_data = sum(1 for m in tier.metrics if m in readings and readings[m].hour is not None)
    findings = tuple(
        Finding(readings[m], reasons)
        for m in tier.metrics
        if m in readings and (reasons := _reasons(readings[m]))
    )
    level = "fine" if with_data else "no data"
    if findings and _rank(level) < _rank("watch"):
        level = "watch"
    for alert in own_alerts:
        wanted = "paging" if is_page(alert.severity) else "watch"
        if _rank(wanted) > _rank(level):
            level = wanted
    # the worst first: alerts' metrics, then the largest drift
    alerted = {a.metric for a in own_alerts}
    ordered = tuple(
        sorted(findings, key=lambda f: (f.reading.metric not in alerted, -(f.reading.drift or 0)))
    )
    return TierVerdict(
        tier=tier,
        level=level,
        findings=ordered,
        alerts=own_alerts,
        slices=tuple(s for s in slices if s.metric in mine),
        with_data=with_data,
    )


@dataclass(frozen=True)
class Verdict:
    """Every tier's verdict, the alerts on no tier's metric, the alerts resolved in the
    range (shown, never counted) and the overall level."""

    tiers: tuple[TierVerdict, ...]
    other_alerts: tuple[FiringAlert, ...] = field(default_factory=tuple)
    resolved: tuple[FiringAlert, ...] = field(default_factory=tuple)

    @property
    def firing(self) -> tuple[FiringAlert, ...]:
        """Every alert firing at the report's time (each on one tier, or on none)."""
        return (*(a for t in self.tiers for a in t.alerts), *self.other_alerts)

    def pages_and_tickets(self) -> tuple[int, int]:
        """How many firing alerts page (critical) and how many are tickets (the rest)."""
        pages = sum(1 for a in self.firing if is_page(a.severity))
        return pages, len(self.firing) - pages

    @property
    def level(self) -> str:
        levels = [t.level for t in self.tiers]
        for alert in self.other_alerts:
            levels.append("paging" if is_page(alert.severity) else "watch")
        return max(levels, key=_rank, default="no data")


def judge_all(
    tiers: Sequence[Tier],
    readings: Mapping[str, Reading],
    alerts: Sequence[FiringAlert],
    slices: Sequence[TopSlice],
) -> Verdict:
    claimed = {m for t in tiers for m in t.metrics}
    return Verdict(
        tiers=tuple(judge(t, readings, alerts, slices) for t in tiers),
        other_alerts=tuple(a for a in alerts if a.firing and a.metric not in claimed),
        resolved=tuple(a for a in alerts if not a.firing),
    )


def worse_since(
    hour: Mapping[float, float], week: Mapping[float, float], direction: str
) -> float | None:
    """The start of the trailing run of times at which the 1h value was on the bad side of
    the 7d value (None when it is not worse at the last common time)."""
    if direction not in ("higher", "lower"):
        return None
    since = None
    for t in sorted(set(hour) & set(week), reverse=True):
        worse = hour[t] < week[t] if direction == "higher" else hour[t] > week[t]
        if not worse:
            break
        since = t
    return since
