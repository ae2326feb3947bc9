"""`ragpulse plan`: what the current traffic can page on, and what a target would cost.

For every per-trace metric with a direction and every group, the live volume (the traces
behind the newest 7d value in `metric_results` over the history they span: a week, or
less on a young store), the metric's level and spread (a share's sqrt(p(1-p)); otherwise
from the 7d interval's width, sd = width / 3.92 x sqrt(n)) give, with the paging
detector's false-page budget (`collector.jobs.drift.detector`, the same arithmetic
`evaluators.drift` uses to set its threshold):

- the smallest relative drop paged within the target delay at today's volume (None when
  no drop under 100% is: a drop over 100% is not a drop a share or a score can make), and
- the traces an hour needed to page on the asked drop within the asked delay; for LLM-judge
  metrics also the judge sampling rate that gives them (of traces, or of closed
  conversations for the `sessions` job's judged outcomes), and the judge's cost a day at
  that rate (the average cost of a judged trace over the last 7 days, from `judgments`).

The volume is per hour of the history behind the 7d value (`collector.store.history`): a
week's count over a week, an hour-old store's count over its hour. With less history than
the rule asks (the shortest evaluation window, 1h by default) the volume is not
extrapolated: the volume, the drop it pages on and the judge rate are left out, and the
row's `note` says how much history there is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from collector.jobs.catalog.sessions import NAME as SESSIONS
from collector.settings import Settings
from collector.store.history import History, short_of, shortest_window, shortfall, stored_history
from collector.store.models import Judgment, MetricResult
from evaluators.drift import detectable_shift, samples_needed
from evaluators.errors import UnknownMetricError
from evaluators.registry import JobMetric, MetricSpec, describe
from ragpulse.job_setup import drift_config


@dataclass(frozen=True)
class PlanRow:
    metric: str
    group: str
    per_hour: float | None
    """Traces an hour (None: too little history to measure it, see `note`)."""
    detectable: float | None
    """Relative drop paged within the delay at today's volume, below 1 (None: cannot
    say, or no drop under 100% is paged: see `note`)."""
    needed_per_hour: float | None
    judged: bool
    judge_rate: float | None = None
    judge_usd_per_day: float | None = None
    history_s: float | None = None
    """Seconds of history behind the volume (at most the 7d window's)."""
    note: str | None = None
    """Why a number is left out: too little history, or no drop under 100% paged."""


NOT_DETECTABLE = "no drop under 100% is paged within the delay at this volume"


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


def _per_trace(spec: MetricSpec | JobMetric) -> bool:
    """Scored per trace (or per closed session), so the drift detectors page on it."""
    if isinstance(spec, JobMetric):
        return spec.per_trace
    return spec.kind != "dataset"


def judge_sampling(settings: Settings, job: str) -> float:
    """The share of its units the job's judge scores: closed conversations for the
    `sessions` job (`sessions.judge_rate`), traces for the others (`sampling.judge`)."""
    return settings.sessions.judge_rate if job == SESSIONS else settings.sampling.judge


def _history(session: Session, job: str, cache: dict[str, History]) -> History:
    """The history of the job's outcomes, else of the stored traces (jobs that keep no
    per-trace outcomes); with neither (results kept longer than what they were computed
    from), the result's window is all that is known: `History(None, None)`."""
    if job not in cache:
        found = stored_history(session, jobs=[job])
        cache[job] = found if found.first is not None else stored_history(session)
    return cache[job]


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
    minimum = shortest_window(settings.scheduler.windows)
    histories: dict[str, History] = {}
    # the detector's in-control run per weekly sample (the threshold grows with volume)
    arl_per_weekly = page.series_metrics * len(groups) / page.false_alarms_per_week
    out = []
    for row in sorted(rows, key=lambda r: (r.metric, r.group_key)):
        try:
            spec = describe(row.metric)
        except UnknownMetricError:
            continue
        if spec.direction not in ("higher", "lower") or not _per_trace(spec):
            continue
        judged = bool(getattr(spec, "uses_judge", False))
        history = _history(session, row.job, histories)
        start, end = row.window_start, row.window_end
        if history.first is None:
            history = History(start, end)
        covered = history.inside(start, end)
        per_hour: float | None = None
        note = None
        if short_of(history, start, end, minimum):
            note = shortfall(history, end, f"the {row.window} volume", end - start, minimum)
        else:
            per_hour = float(row.n) / (covered.total_seconds() / 3600.0)
        level = _spread(row, bool(getattr(spec, "proportion", False)))
        base = PlanRow(
            row.metric, row.group_key, per_hour, None, None, judged,
            history_s=covered.total_seconds(), note=note,
        )  # fmt: skip
        if level is None or (per_hour is not None and arl_per_weekly * per_hour * 168.0 <= 1):
            out.append(base)
            continue
        mu, sd = level
        scale = abs(mu) / sd  # a relative change in standard deviations, per unit
        needed = _needed_per_hour(detect * scale, within_s, arl_per_weekly)
        if per_hour is None:
            out.append(replace(base, needed_per_hour=needed))
            continue
        arl = arl_per_weekly * per_hour * 168.0
        shift = detectable_shift(per_hour * within_s / 3600.0, arl)
        detectable = shift / scale if math.isfinite(shift) else None
        if detectable is None or detectable >= 1.0:
            detectable, note = None, NOT_DETECTABLE
        rate = usd = None
        sampled = judge_sampling(settings, row.job)
        if judged and per_hour > 0 and sampled > 0:
            rate = sampled * needed / per_hour
            if cost is not None:
                traffic_per_day = per_hour / sampled * 24
                usd = min(rate, 1.0) * traffic_per_day * cost
        out.append(
            replace(
                base,
                detectable=detectable,
                needed_per_hour=needed,
                judge_rate=rate,
                judge_usd_per_day=usd,
                note=note,
            )
        )
    return out
