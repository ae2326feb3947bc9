"""Evaluation results the application emitted itself, as the `external:<name>` series.

The traces' `evaluations` column (OTel `gen_ai.evaluation.result` log records, span events
and span attributes, merged at ingest: `collector.store.evaluation_store`) holds per trace
name -> score, label, explanation, error type. Every run this job reads the traces whose
evaluations are new or changed since its watermark (the whole longest window after a
start), turns each into per-trace outcomes — `Score` when a score was given, `Failed` with
the error type, `Skipped` for a result with only a label — and aggregates them per window
and group like every per-sample metric (mean, n, 95% CI; group labels folded by the
`labels` bounds), published under `metric="external:<name>"`.

Names come from the application, so they are bounded: cleaned (lower case, `[a-z0-9_.@-]`,
cut to `external.max_name_length`) and at most `external.max_names` of them get series;
further names fold into `external:other` (their scores pooled, a trace's several folded
scores averaged), logged once each and counted like folded label values:
`ragpulse_label_values_{seen,kept,folded_total}{job="external",label="metric"}`. Which
names are kept is decided in order of appearance (after a start: the most frequent in the
longest window first); the per-trace state lives in memory, as the evaluations are in the
traces.
"""

from __future__ import annotations

import logging
import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from collector.jobs.definition import JobDefinition, JobEnvironment, JobReport
from collector.jobs.engine import IncrementalJob
from collector.jobs.job_state import load_state, record_run
from collector.jobs.labels import Folding
from collector.jobs.outcomes import OutcomeColumns, WindowAggregate
from collector.jobs.publish import quality_points
from collector.jobs.result_store import write_results
from collector.jobs.sync import GRACE, epoch
from collector.jobs.windows import Window, group_values
from collector.settings import Settings
from collector.store.models import Trace
from evaluators.outcome import Failed, Outcome, Score, Skipped
from evaluators.signature import Signature

logger = logging.getLogger(__name__)

NAME = "external"
PREFIX = "external:"
METRICS: tuple[str, ...] = ()
"""No registry metrics: the names come from the application (`external:<name>`)."""
OTHER = "other"
LABEL_ONLY = "no score value (label only)"
_UNSAFE = re.compile(r"[^a-z0-9_.@-]+")


def definition(settings: Settings) -> JobDefinition:
    cfg = settings.external

    def build(definition: JobDefinition, env: JobEnvironment) -> IncrementalJob:
        return ExternalJob(definition, env, cfg.max_names, cfg.max_name_length)

    return JobDefinition(
        name=NAME,
        metrics=(),
        description="the application's own evaluation results (OTel gen_ai.evaluation.result)",
        dataset_groups=True,
        factory=build,
    )


def metric_name(raw: Any, max_length: int) -> str | None:
    """`external:<name>` for an application's evaluation name, or None when nothing of it
    is left after cleaning (lower case, runs of other characters become `_`)."""
    if not isinstance(raw, str):
        return None
    name = _UNSAFE.sub("_", raw.strip().lower()).strip("_")[:max_length]
    return PREFIX + name if name else None


def outcome_of(result: Any) -> Outcome | None:
    """One stored evaluation (`{"score", "label", "explanation", "error_type"}`) as an
    outcome; None when it is not an object."""
    if not isinstance(result, Mapping):
        return None
    score = result.get("score")
    if isinstance(score, int | float) and not isinstance(score, bool):
        return Score(float(score))
    error = result.get("error_type")
    if isinstance(error, str) and error:
        return Failed(error)
    return Skipped(LABEL_ONLY)


class ExternalJob(IncrementalJob):
    """See the module docstring. Outcomes are held in `OutcomeColumns` whose columns are
    slots (`s0`..`s<max_names>`, the last for `other`), named by `self.slots`."""

    def __init__(
        self,
        definition: JobDefinition,
        env: JobEnvironment,
        max_names: int = 20,
        max_name_length: int = 64,
    ) -> None:
        self.definition = definition
        self.env = env
        self.name = definition.name
        self.max_names = max_names
        self.max_name_length = max_name_length
        self._longest = max(w.seconds for w in env.windows)
        self._other_slot = f"s{max_names}"
        self.columns = OutcomeColumns(
            [f"s{i}" for i in range(max_names + 1)],
            env.group_labels,
            env.label_limits.max_length,
        )
        self.slots: dict[str, str] = {}
        """metric name (`external:<name>`) -> its column."""
        self.folded: set[str] = set()
        """Names that had no column left and fold into `external:other`."""
        self.watermark: datetime | None = None
        self._loaded = False
        self._labels: tuple[Folding, ...] = ()

    def run(self, now: datetime | None = None) -> JobReport:
        started = time.perf_counter()
        now = now or datetime.now(UTC)
        with self.env.session_factory() as session:
            state = load_state(session, self.name)
            rows = self._changed(session, now)
            self._admit_names(rows)
            for row in rows:
                self._put(row)
            self.columns.prune(epoch(now) - self._longest)
            points = self._points(now)
            written = write_results(session, self.name, now, self.env.retention, points)
            self._publish = quality_points(self.name, points, epoch(now))
            message = f"{len(rows)} new or updated traces, {len(self.slots)} names"
            if self.folded:
                message += f", {len(self.folded)} folded into {PREFIX}{OTHER}"
            state.watermark = self.watermark
            record_run(session, state, now, message, started=started)
        return JobReport(
            self.name,
            "ok",
            len(rows),
            written,
            time.perf_counter() - started,
            message,
            labels=self._labels,
        )

    # -- steps ----------------------------------------------------------------------------

    def _changed(self, session: Session, now: datetime) -> Sequence[Any]:
        t = Trace
        query = select(t.trace_id, t.timestamp, t.updated_at, t.tags, t.model, t.evaluations).where(
            t.evaluations.is_not(None)
        )
        if not self._loaded or self.watermark is None:
            query = query.where(t.timestamp >= now - timedelta(seconds=self._longest))
        else:
            query = query.where(t.updated_at > self.watermark - GRACE)
        rows = [
            r
            for r in session.execute(query)
            if isinstance(r.evaluations, Mapping)
            and not self.columns.is_current(r.trace_id, epoch(r.updated_at))
        ]
        self._loaded = True
        if rows:
            latest = max(r.updated_at for r in rows)
            if self.watermark is None or latest > self.watermark:
                self.watermark = latest
        return rows

    def _admit_names(self, rows: Sequence[Any]) -> None:
        """Give new names a column while there are some left, the most frequent first."""
        counts: Counter[str] = Counter()
        for row in rows:
            for raw in row.evaluations:
                name = metric_name(raw, self.max_name_length)
                if name is not None and name not in self.slots:
                    counts[name] += 1
        for name, _count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            if len(self.slots) < self.max_names:
                self.slots[name] = f"s{len(self.slots)}"
            elif name not in self.folded:
                self.folded.add(name)
                logger.warning(
                    "job external: evaluation name %r folds into %s%s: more than "
                    "external.max_names (%d) names",
                    name,
                    PREFIX,
                    OTHER,
                    self.max_names,
                )

    def _put(self, row: Any) -> None:
        outcomes: dict[str, Outcome] = {}
        pooled: list[Outcome] = []
        for raw, result in sorted(row.evaluations.items()):
            name = metric_name(raw, self.max_name_length)
            outcome = outcome_of(result)
            if name is None or outcome is None:
                continue
            slot = self.slots.get(name)
            if slot is None:
                pooled.append(outcome)
            elif slot not in outcomes:  # two raw spellings of one name: the first counts
                outcomes[slot] = outcome
        if pooled:
            outcomes[self._other_slot] = _pool(pooled)
        groups = group_values(
            row.tags,
            self.env.group_labels,
            self.columns.max_length,
            model=row.model,
            version_sources=self.env.version_sources,
        )
        self.columns.put(
            row.trace_id, epoch(row.updated_at), epoch(row.timestamp), groups, outcomes
        )

    def _points(self, now: datetime) -> list[tuple[Window, WindowAggregate]]:
        end = epoch(now)
        folds = self.columns.folds(end - self._longest, self.env.label_limits)
        names_fold = Folding(
            "metric",
            len(self.slots) + len(self.folded),
            frozenset(self.slots),
            len(self.folded),
        )
        self._labels = (*(fold.folding for fold in folds.values()), names_fold)
        names = {slot: name for name, slot in self.slots.items()}
        if self.folded:
            names[self._other_slot] = PREFIX + OTHER
        signatures = {slot: Signature() for slot in names}
        points = []
        for window in self.env.windows:
            for item in self.columns.aggregate(
                end - window.seconds, end, {}, signatures, folds=folds
            ):
                metric = names.get(item.aggregate.metric)
                if metric is None:
                    continue
                aggregate = replace(item.aggregate, metric=metric)
                points.append((window, WindowAggregate(item.group, aggregate)))
        return points


def _pool(outcomes: Sequence[Outcome]) -> Outcome:
    """One outcome for several folded results of one trace: their mean score, else the
    first failure, else a skip."""
    scores = [o.value for o in outcomes if isinstance(o, Score)]
    if scores:
        return Score(sum(scores) / len(scores))
    failed = next((o for o in outcomes if isinstance(o, Failed)), None)
    return failed if failed is not None else outcomes[0]
