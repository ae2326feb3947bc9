"""The canary: the candidate version against the baseline on live traffic, same window.

Every run, over the last `canary.window` (the comparison is recomputed at most every
`canary.every`; a run that found no pair does not count, so the next run looks again and
on a fresh service the first comparison comes as soon as two versions qualify):

1. the versions are those of the traces' `version` slice (`versions.sources`). Unless
   named (`canary.baseline` / `canary.candidate`), the candidate is the version first
   seen most recently, the baseline the one first seen just before it, both among the
   versions with at least `canary.min_traces` scored traces in the window ("first seen"
   over the longest scheduler window);
2. each guarded metric's per-trace scores of both versions (`job_outcomes`) are compared
   as `ragpulse compare` does (`evaluators.comparison.rows`): paired on the questions both
   answered when there are enough (shadow or replay traffic), else unpaired; the
   difference candidate - baseline with its 95% interval, the p-value corrected across
   the guarded metrics (Holm or Benjamini-Hochberg), and the smallest difference this
   traffic detects at the configured power, so "not significant" on little traffic is
   never read as "equal";
3. rows go to `metric_results` with window `canary:<window>`, one per metric and
   statistic (group key = the statistic; the versions ride in the group labels, so the
   newest pair replaces the previous one on `/metrics`). `exporters.canary` turns them
   into the `ragpulse_canary_*` families; `RagpulseCanaryWorse` fires on `worse`.

When fewer than two versions qualify, the run writes empty rows (no value), so the last
comparison leaves `/metrics` instead of lingering after the rollout ended; while none
qualify, again at most every `canary.every` (the runs between look for a pair only).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from types import MappingProxyType

from sqlalchemy.orm import Session

from collector.jobs.run.definition import JobDefinition, JobEnvironment, JobReport
from collector.jobs.run.engine import IncrementalJob
from collector.jobs.run.job_state import load_state, record_run
from collector.jobs.windows.aggregate import WindowAggregate
from collector.jobs.windows.labels import clean_value
from collector.jobs.windows.window import Group, Window
from collector.settings import Settings, parse_duration
from collector.store.models import JobState
from collector.store.version_scores import VersionSeen, version_scores, versions_seen
from evaluators.aggregate import Aggregate
from evaluators.comparison.result import MetricComparison
from evaluators.comparison.rows import RowsComparison, compare_rows
from evaluators.errors import UnknownMetricError
from evaluators.registry import describe

NAME = "canary"
METRICS: tuple[str, ...] = ()
"""No `ragpulse_metric_value` series: its families are `ragpulse_canary_*`."""
PREFIX = "canary:"
STATS = (
    "diff",
    "p_value",
    "p_adjusted",
    "significant",
    "worse",
    "detectable",
    "effect_size",
    "n_baseline",
    "n_candidate",
    "pairs",
)
"""One row each per metric: `diff` carries the interval; `worse` is 1 when the candidate
is significantly worse in the metric's direction; `detectable` is the smallest absolute
difference this traffic detects (two-sided, at alpha, with the configured power)."""
NO_PAIR = "no pair"
"""The `job_state` status of a run that found no two versions to compare: unlike "ok", it
does not stop the next runs from comparing (runs that still find none write nothing until
`canary.every` has passed, then the empty rows again)."""


def definition(settings: Settings) -> JobDefinition:
    return JobDefinition(
        name=NAME,
        metrics=METRICS,
        description="the candidate version against the baseline on live traffic",
        factory=CanaryJob,
    )


def worse(comparison: MetricComparison, direction: str) -> bool:
    """Significantly worse for a metric of `direction` ("higher"/"lower" is better)."""
    if not comparison.significant:
        return False
    return comparison.diff < 0 if direction != "lower" else comparison.diff > 0


def direction_of(metric: str) -> str:
    try:
        return describe(metric).direction or "higher"
    except UnknownMetricError:
        return "higher"


def choose_versions(
    in_window: Sequence[VersionSeen],
    first_seen: Mapping[str, datetime],
    *,
    min_traces: int,
    baseline: str = "",
    candidate: str = "",
) -> tuple[str, str] | None:
    """(baseline, candidate) per the module docstring, or None when there is no pair."""
    eligible = [v for v in in_window if v.traces >= min_traces]
    order = sorted(eligible, key=lambda v: (first_seen.get(v.version, v.first_seen), v.version))
    names = [v.version for v in order]
    cand = candidate or (names[-1] if names else "")
    if not cand or (candidate and candidate not in names):
        return None
    if baseline:
        return (baseline, cand) if baseline in names and baseline != cand else None
    before = [n for n in names if n != cand]
    if candidate:
        earlier = names[: names.index(cand)]
        before = earlier or before
    return (before[-1], cand) if before else None


class CanaryJob(IncrementalJob):
    """Not a per-trace job: it reads the per-trace outcomes the other jobs stored."""

    def __init__(self, definition: JobDefinition, env: JobEnvironment) -> None:
        super().__init__(definition, env)
        self.options = env.options.canary
        self.metric_jobs = env.options.metric_jobs
        self.window = self.options.window
        self._seconds = parse_duration(self.window)
        self._every = parse_duration(self.options.every)
        self._lookback = max([w.seconds for w in env.windows] + [self._seconds])

    @property
    def metrics(self) -> list[str]:
        wanted = self.options.metrics
        return [m for m in wanted if self.metric_jobs.get(m)]

    def run(self, now: datetime | None = None) -> JobReport:
        started = time.perf_counter()
        now = now or datetime.now(UTC)
        with self.env.session_factory() as session:
            state = load_state(session, self.name)
            recent = self._recent(state, now)
            if recent and state.last_status == "ok":
                return JobReport(
                    self.name,
                    "ok",
                    message="recomputed at most every " + self.options.every,
                )
            points, message, status = self._points(session, now)
            if recent and state.last_status == NO_PAIR and status == NO_PAIR:
                # Still no pair: the empty rows the recorded run wrote are the newest; they
                # are written again, and the run recorded, at most every `canary.every`.
                return JobReport(self.name, "ok", 0, 0, time.perf_counter() - started, message)
            written = self._write(session, now, points)
            record_run(session, state, now, message, started=started, status=status)
        return JobReport(self.name, "ok", 0, written, time.perf_counter() - started, message)

    def _recent(self, state: JobState, now: datetime) -> bool:
        """True when the last recorded run is less than `canary.every` before `now`."""
        last = state.last_run_at
        if last is None:
            return False
        last = last if last.tzinfo else last.replace(tzinfo=UTC)
        return timedelta(0) <= now - last < timedelta(seconds=self._every)

    def _jobs(self) -> list[str]:
        return sorted({j for m in self.metrics for j in self.metric_jobs[m]})

    def _points(
        self, session: Session, now: datetime
    ) -> tuple[list[tuple[Window, WindowAggregate]], str, str]:
        """The run's rows, its message and its `job_state` status (`NO_PAIR` or "ok")."""
        metrics = self.metrics
        if not self.options.enabled or not metrics:
            return [], "disabled or no guarded metric has per-trace scores", "ok"
        jobs = self._jobs()
        since = now - timedelta(seconds=self._seconds)
        seen = versions_seen(
            session, jobs=jobs, since=now - timedelta(seconds=self._lookback), until=now
        )
        first = {v.version: v.first_seen for v in seen}
        pair = choose_versions(
            versions_seen(session, jobs=jobs, since=since, until=now),
            first,
            min_traces=self.options.min_traces,
            baseline=self.options.baseline,
            candidate=self.options.candidate,
        )
        if pair is None:
            message = (
                f"no two versions with {self.options.min_traces} scored traces "
                f"in the last {self.window} ({len(seen)} versions seen)"
            )
            return self._empty(metrics), message, NO_PAIR
        a, b = pair
        rows = [
            [
                (t.pair_key, MappingProxyType(dict(t.scores)))
                for t in version_scores(
                    session, jobs=jobs, metrics=metrics, version=v, since=since, until=now
                )
            ]
            for v in pair
        ]
        found = compare_rows(
            rows[0],
            rows[1],
            metrics,
            pairing=self.options.pairing,
            resamples=self.options.resamples,
            alpha=self.options.alpha,
            correction=self.options.correction,
            power=self.options.power,
            seed=0,
        )
        points = self._compared(found, a, b, metrics)
        worse_on = [c.metric for c in found.comparison.metrics if worse(c, direction_of(c.metric))]
        message = f"{b} vs {a}: {found.describe()}; " + (
            "significantly worse on " + ", ".join(worse_on) if worse_on else "not worse"
        )
        return points, message, "ok"

    def _group(self, stat: str, a: str, b: str) -> Group:
        return Group(stat, MappingProxyType({"baseline": a, "candidate": b, "stat": stat}))

    def _empty(self, metrics: Sequence[str]) -> list[tuple[Window, WindowAggregate]]:
        window = Window(PREFIX + self.window, self._seconds)
        return [
            (window, WindowAggregate(self._group(stat, "", ""), Aggregate(m, None, 0)))
            for m in metrics
            for stat in STATS
        ]

    def _compared(
        self, found: RowsComparison, a: str, b: str, metrics: Sequence[str]
    ) -> list[tuple[Window, WindowAggregate]]:
        window = Window(PREFIX + self.window, self._seconds)
        a, b = clean_value(a) or "?", clean_value(b) or "?"
        out = []
        done = {c.metric: c for c in found.comparison.metrics}
        for metric in metrics:
            c = done.get(metric)
            for stat in STATS:
                agg = _stat(metric, stat, c, found) if c is not None else Aggregate(metric, None, 0)
                out.append((window, WindowAggregate(self._group(stat, a, b), agg)))
        return out


def _stat(metric: str, stat: str, c: MetricComparison, found: RowsComparison) -> Aggregate:
    n = c.n
    if stat == "diff":
        return Aggregate(metric, c.diff, n, c.ci_lower, c.ci_upper)
    values: dict[str, float | None] = {
        "p_value": c.p_value,
        "p_adjusted": c.p_adjusted,
        "significant": float(c.significant),
        "worse": float(worse(c, direction_of(metric))),
        "detectable": c.mde,
        "effect_size": c.effect_size,
        "n_baseline": float(c.n_a),
        "n_candidate": float(c.n_b),
        "pairs": float(found.pairs if found.paired else 0),
    }
    return Aggregate(metric, values[stat], n)
