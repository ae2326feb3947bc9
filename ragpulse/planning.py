"""`ragpulse plan`: what the current traffic can page on, and what a target would cost.

For every per-trace metric with a direction and every group, the live volume (the traces
behind the newest 7d value in `metric_results`, a week's worth), the metric's level and spread (a
share's sqrt(p(1-p)); otherwise from the 7d interval's width, sd = width / 3.92 x sqrt(n))
give, with the paging detector's false-page budget (`collector.jobs.drift`, the same
arithmetic `evaluators.drift` uses to set its threshold):

- the smallest relative drop paged within the target delay at today's volume, and
- the traces an hour needed to page on the asked drop within the asked delay; for LLM-judge
  metrics also the judge sampling rate that gives them, and the judge's cost a day at that
  rate (the average cost of a judged trace over the last 7 days, from `judgments`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from collector.settings import Settings
from collector.store.models import Judgment, MetricResult
from evaluators.drift import detectable_shift, samples_needed
from evaluators.errors import UnknownMetricError
from evaluators.registry import describe
from ragpulse.job_setup import drift_config


@dataclass(frozen=True)
class PlanRow:
    metric: str
    group: str
    per_hour: float
    detectable: float | None
    """Relative drop paged within the delay at today's volume (None: cannot say)."""
    needed_per_hour: float | None
    judged: bool
    judge_rate: float | None = None
    judge_usd_per_day: float | None = None


def _latest_7d(session: Session) -> list[MetricResult]:
    newest = (
        select(MetricResult.metric, MetricResult.group_key, func.max(MetricResult.id).label("id"))
        .where(MetricResult.window == "7d")
        .group_by(MetricResult.metric, MetricResult.group_key)
        .subquery()
    )
    return list(session.scalars(select(MetricResult).join(newest, MetricResult.id == newest.c.id)))


def judge_cost_per_trace(session: Session, now: datetime) -> float | None:
    """Average judge spend per judged trace over the last 7 days (None: no priced call)."""
    since = now - timedelta(days=7)
    cost, traces = session.execute(
        select(func.sum(Judgment.cost_usd), func.count(func.distinct(Judgment.trace_id))).where(
            Judgment.created_at >= since, Judgment.trace_id.is_not(None)
        )
    ).one()
    return float(cost) / traces if cost and traces else None


def _spread(row: MetricResult, proportion: bool) -> tuple[float, float] | None:
    """(level, sd) of a series from its 7d row."""
    if row.value is None or row.n < 2:
        return None
    if proportion:
        p = row.value
        return (p, math.sqrt(p * (1 - p))) if 0 < p < 1 else None
    if row.ci_lower is None or row.ci_upper is None:
        return None
    sd = (row.ci_upper - row.ci_lower) / 3.92 * math.sqrt(row.n)
    return (row.value, sd) if sd > 0 and row.value != 0 else None


def _needed_per_hour(shift: float, within_s: float, arl_per_weekly_sample: float) -> float:
    """Traces an hour that catch `shift` within `within_s` on average; the threshold grows
    with the volume (a busier series gets a longer in-control run), so iterate to the
    fixed point."""
    hours = within_s / 3600.0
    needed = samples_needed(shift, 1e6) / hours
    for _ in range(50):
        arl = max(arl_per_weekly_sample * needed * 168.0, 2.0)
        nxt = samples_needed(shift, arl) / hours
        if abs(nxt - needed) <= 1e-9 * needed:
            break
        needed = nxt
    return needed


def plan(
    session: Session, settings: Settings, detect: float, within_s: float, now: datetime
) -> list[PlanRow]:
    """A row per per-trace metric with a direction and group that has a 7d value."""
    config = drift_config(settings)
    if config is None:
        raise ValueError("drift detection is off (alerting.enabled = false)")
    page = config.detectors[0]
    rows = _latest_7d(session)
    groups = {r.group_key for r in rows} or {""}
    cost = judge_cost_per_trace(session, now)
    out = []
    for row in sorted(rows, key=lambda r: (r.metric, r.group_key)):
        try:
            spec = describe(row.metric)
        except UnknownMetricError:
            continue
        if (
            spec.direction not in ("higher", "lower")
            or getattr(spec, "kind", "dataset") == "dataset"
        ):
            continue
        judged = bool(getattr(spec, "uses_judge", False))
        per_week = float(row.n)  # the 7d window's traces
        arl = page.series_metrics * len(groups) * per_week / page.false_alarms_per_week
        level = _spread(row, bool(getattr(spec, "proportion", False)))
        per_hour = per_week / 168.0
        if level is None or arl <= 1:
            out.append(PlanRow(row.metric, row.group_key, per_hour, None, None, judged))
            continue
        mu, sd = level
        scale = abs(mu) / sd  # a relative change in standard deviations, per unit
        shift = detectable_shift(per_hour * within_s / 3600.0, arl)
        detectable = shift / scale if math.isfinite(shift) else None
        needed = _needed_per_hour(detect * scale, within_s, arl / per_week)
        rate = usd = None
        if judged and per_hour > 0 and settings.sampling.judge > 0:
            rate = settings.sampling.judge * needed / per_hour
            if cost is not None:
                traffic_per_day = per_hour / settings.sampling.judge * 24
                usd = min(rate, 1.0) * traffic_per_day * cost
        out.append(
            PlanRow(row.metric, row.group_key, per_hour, detectable, needed, judged, rate, usd)
        )
    return out
