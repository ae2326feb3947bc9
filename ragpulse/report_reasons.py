"""Why a panel of `ragpulse report` is empty, from the facts at the report's time.

A dashboard's `noValue` is one fixed text for every state; the report can look: whether
the job computing the panel's metric has run (its `ragpulse_job_runs_total` in
Prometheus by status), failed, skipped its runs or is not scheduled; whether an LLM judge
is configured; whether any series carries a version; whether stored traces carry ground
truth, and whether it arrived after the job's last run. A job that has not run yet is
"waiting for the first run", not "no ground truth"; a metric per version is empty for its
metric's reason when the versions table lists versions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from collector.settings import Settings
from dashboards import conditions
from exporters.report.empty import EmptyReason
from exporters.report.promapi import PromClient, QueryError, format_duration

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

WAITING = "waiting for the first run"
NOT_SCHEDULED = "job not scheduled"
FAILING = "job failing"
SKIPPED = "job skipped"
NO_JUDGE = "no judge configured"
UNSCRAPED = "job runs not scraped"


@dataclass(frozen=True)
class Facts:
    """What Prometheus and the settings say at the report's time."""

    runs: dict[str, dict[str, float]] = field(default_factory=dict)
    """Job -> status (ok, error, skipped, locked) -> runs."""
    last_success: dict[str, float] = field(default_factory=dict)
    versions: tuple[str, ...] = ()
    results: bool = False
    """Prometheus holds quality results (some job has run, wherever it is scraped)."""
    judge_models: tuple[str, ...] | None = None
    """None: the settings are not known."""
    slo_metrics: dict[str, str] = field(default_factory=dict)
    """Declared SLO -> the metric its events count."""
    scheduled: tuple[str, ...] = ()
    """Jobs `scheduler.jobs` names (empty: every job)."""
    interval_s: float | None = None
    initial_delay_s: float | None = None
    lookback_s: float = 86400.0
    ground_truth: int | None = None
    """Request traces of the lookback that carry ground truth (None: the store is not read)."""
    ground_truth_newest: float | None = None
    """When the newest of them was received."""


def _by(client: PromClient, expr: str, label: str, now: float) -> dict[str, float]:
    try:
        return {labels.get(label, ""): value for labels, value in client.query(expr, now)}
    except QueryError:
        return {}


def gather(
    client: PromClient,
    settings: Settings | None,
    now: float,
    lookback_s: float,
    ground_truth: tuple[int, float | None] | None = None,
) -> Facts:
    """The facts: job runs within `lookback_s` (a counter keeps its last value while the
    jobs run; `last_over_time` keeps it after they stopped), the versions on any result."""
    window = format_duration(max(lookback_s, 300.0))
    runs = "ragpulse_job_runs_total"
    by_status: dict[str, dict[str, float]] = {}
    try:
        found = client.query(f"sum by (job, status) (last_over_time({runs}[{window}]))", now)
    except QueryError:
        found = []
    for labels, value in found:
        by_status.setdefault(labels.get("job", ""), {})[labels.get("status", "")] = value
    return Facts(
        runs=by_status,
        last_success=_by(
            client,
            f"max by (job) (last_over_time(ragpulse_job_last_success_timestamp_seconds[{window}]))",
            "job",
            now,
        ),
        versions=tuple(
            sorted(
                _by(
                    client,
                    'count by (version) (last_over_time(ragpulse_metric_value{version!=""}'
                    f"[{window}]))",
                    "version",
                    now,
                )
            )
        ),
        results=bool(
            _by(client, f"count(last_over_time(ragpulse_metric_value[{window}]))", "", now)
        ),
        judge_models=tuple(settings.judge.models) if settings is not None else None,
        slo_metrics={s.name: s.metric for s in settings.slo.specs()} if settings else {},
        scheduled=tuple(settings.scheduler.jobs) if settings is not None else (),
        interval_s=settings.scheduler.interval_s if settings is not None else None,
        initial_delay_s=settings.scheduler.initial_delay_s if settings is not None else None,
        lookback_s=lookback_s,
        ground_truth=ground_truth[0] if ground_truth is not None else None,
        ground_truth_newest=ground_truth[1] if ground_truth is not None else None,
    )


def ground_truth_traces(
    engine: Engine, now: float, lookback_s: float
) -> tuple[int, float | None] | None:
    """How many request traces of the last `lookback_s` carry relevant_ids, relevance or
    shown_url (a JSON `null` is none), and when the newest was received; None when the
    store cannot be read."""
    from sqlalchemy import String, and_, cast, func, or_, select
    from sqlalchemy.exc import SQLAlchemyError

    from collector.store.models import Trace

    def present(column: Any) -> Any:
        return and_(column.is_not(None), cast(column, String) != "null")

    since = datetime.fromtimestamp(now - lookback_s, UTC)
    query = select(func.count(), func.max(Trace.received_at)).where(
        Trace.timestamp >= since,
        Trace.not_request.is_(None),
        or_(present(Trace.relevant_ids), present(Trace.relevance), present(Trace.shown_url)),
    )
    try:
        with engine.connect() as connection:
            count, newest = connection.execute(query).one()
    except SQLAlchemyError:
        return None
    if isinstance(newest, str):  # SQLite hands back an aggregate's datetime as text
        newest = datetime.fromisoformat(newest)
    if isinstance(newest, datetime) and newest.tzinfo is None:
        newest = newest.replace(tzinfo=UTC)
    return int(count), newest.timestamp() if isinstance(newest, datetime) else None


def _clock(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%H:%M:%S UTC")


def _schedule(facts: Facts) -> str:
    if facts.interval_s is None:
        return ""
    return (
        f" (the jobs run every {facts.interval_s:g} s, the first "
        f"{facts.initial_delay_s or 0:g} s after the scheduler starts"
        + (
            f"; another job last finished at {_clock(max(facts.last_success.values()))}"
            if facts.last_success
            else ""
        )
        + ")"
    )


_SLO = re.compile(r'slo="([^"]+)"')
BLOCKED = frozenset({WAITING, NOT_SCHEDULED, FAILING, SKIPPED, NO_JUDGE, UNSCRAPED})
"""Reasons that are about the job, not the traces: an SLO of its metric has them too."""


@dataclass(frozen=True)
class EmptyReasons:
    """The `Reasons` of `exporters.report.empty` for one report."""

    facts: Facts

    def __call__(self, exprs: Sequence[str]) -> EmptyReason | None:
        facts = self.facts
        ruled = conditions.rule_condition(exprs)
        if ruled is conditions.JUDGE and facts.judge_models == ():
            return _no_judge()
        if ruled is conditions.SLO_EVENTS:
            blocked = self._slo(exprs)
            if blocked is not None:
                return blocked
        if ruled is not None:
            return EmptyReason(ruled.short, ruled.text)
        per_version = any(conditions.VERSION_RULE.search(e) for e in exprs)
        if per_version and not facts.versions:
            return EmptyReason(
                conditions.VERSIONS.short,
                "No versions: no series carries a version (traces need tags.version, OTLP "
                "service.version, or the tags versions.sources names)",
            )
        job = conditions.job_of(exprs)
        if job is None:
            if not facts.runs:
                return EmptyReason(
                    WAITING, f"Waiting for the first run of the jobs{_schedule(facts)}"
                )
            return None
        return self._job(job, conditions.condition(exprs), per_version)

    def _slo(self, exprs: Sequence[str]) -> EmptyReason | None:
        """An SLO whose metric's job cannot score yet (no judge, not run, failing) says so;
        otherwise the SLO's own text."""
        named = next((m.group(1) for e in exprs if (m := _SLO.search(e))), None)
        metric = self.facts.slo_metrics.get(named or "")
        source = [f'metric="{metric}"']
        job = conditions.job_of(source) if metric else None
        if job is None:
            return None
        found = self._job(job, conditions.condition(source), False)
        if found.short in BLOCKED:
            return EmptyReason(found.short, f"The SLO {named} counts {metric}: {found.text}")
        return None

    def _job(self, job: str, found: conditions.Condition, per_version: bool) -> EmptyReason:
        facts = self.facts
        if facts.scheduled and job not in facts.scheduled:
            return EmptyReason(
                NOT_SCHEDULED,
                f"The job {job} is not scheduled: scheduler.jobs names "
                f"{', '.join(facts.scheduled)} (ragpulse jobs list)",
            )
        if found is conditions.JUDGE and facts.judge_models == ():
            return _no_judge()
        statuses = facts.runs.get(job, {})
        if not statuses.get("ok"):
            if statuses.get("skipped"):
                return EmptyReason(
                    SKIPPED,
                    f"The job {job} skipped its {statuses['skipped']:g} runs (its log line says "
                    "why, e.g. an input it needs is not configured)",
                )
            if statuses.get("error"):
                return EmptyReason(
                    FAILING,
                    f"The job {job} has not succeeded yet: {statuses['error']:g} runs failed "
                    "(the jobs' log says why; Operations row: job runs by status)",
                )
            if not facts.runs and facts.results:
                return EmptyReason(
                    UNSCRAPED,
                    "Prometheus holds results but no job runs (ragpulse_job_runs_total): does "
                    f"it scrape the process running the jobs? Whether {job} ran is unknown",
                )
            return EmptyReason(WAITING, f"Waiting for the first run of {job}{_schedule(facts)}")
        last = facts.last_success.get(job)
        ran = f"{job} last ran at {_clock(last)}" if last is not None else f"{job} has run"
        versions = f" (versions: {', '.join(facts.versions)})" if per_version else ""
        if found is conditions.GROUND_TRUTH and facts.ground_truth is not None:
            held = _span(facts.lookback_s)
            if facts.ground_truth:
                return _not_scored(facts, job, ran, versions, last)
            return EmptyReason(
                found.short,
                f"No ground truth{versions}: no trace of the last {held} carries "
                f"relevant_ids, relevance or shown_url (in the trace or by feedback); {ran}",
            )
        if found.lacks:
            return EmptyReason(
                found.short, f"{found.short.capitalize()}{versions}: {ran}, and {found.lacks}"
            )
        if found is conditions.JUDGE:
            return EmptyReason(
                "no judge scores yet",
                f"No judge scores yet{versions}: {ran} and scored no trace (are traces sampled "
                "for the judge? do its calls fail? the Judge row says)",
            )
        return EmptyReason(
            "no result yet", f"No result yet{versions}: {ran} and wrote no value here"
        )


def _not_scored(facts: Facts, job: str, ran: str, versions: str, last: float | None) -> EmptyReason:
    """Traces carry ground truth the job has no result from: newer than its last run, or
    not sampled for it."""
    count = facts.ground_truth or 0
    some = f"{count} trace{'s' if count > 1 else ''} of the last {_span(facts.lookback_s)}"
    newest = facts.ground_truth_newest
    if newest is not None and last is not None and newest > last:
        why = (
            f"the newest arrived at {_clock(newest)}, after {job}'s last run at {_clock(last)}: "
            "it scores them at its next run"
            + (f" (every {facts.interval_s:g} s)" if facts.interval_s else "")
        )
    else:
        why = f"{ran} and scores only the traces sampled for it"
    return EmptyReason(
        "ground truth not scored yet",
        f"Ground truth not scored yet{versions}: {some} carr{'y' if count > 1 else 'ies'} it; "
        f"{why}",
    )


def _span(seconds: float) -> str:
    minutes = seconds / 60
    if minutes < 120:
        return f"{minutes:.0f} min"
    return f"{minutes / 60:.0f} h" if minutes < 48 * 60 else f"{minutes / 1440:.0f} days"


def _no_judge() -> EmptyReason:
    return EmptyReason(
        NO_JUDGE,
        "No LLM judge configured: set RAGPULSE_JUDGE__MODELS (and RAGPULSE_JUDGE__API_BASE for "
        "a server of your own; in the demo: make demo JUDGE=local)",
    )
