"""Evaluation results the application emitted itself, as the `external:<name>` series.

The traces' `evaluations` column (OTel `gen_ai.evaluation.result` log records, span events
and span attributes, merged at ingest: `collector.store.evaluation_store`) holds per trace
name -> score, label, explanation, error type. Every run this job lists the traces with
evaluations whose version has no stored outcomes yet (`sync.TraceCursor.pending`: new or
changed since its watermark; after a start with none stored, the whole longest window),
`sync.BACKLOG_CHUNK` at a time, and turns each into per-trace outcomes — `Score` when a
score was given, `Failed` with the error type, `Skipped` for a result with only a label —
stored in `job_outcomes` under the cleaned name (`external:<name>`, a metric of its own)
while their contributions move in `job_buckets` in the same transaction (`record_each`:
a trace whose evaluations change is counted again once, its old contribution out). The
windows come from those sums (`external_windows`), per window and group like every
per-sample metric (mean, n, 95% CI; group labels folded by the `labels` bounds), published
under `metric="external:<name>"`. Nothing per trace is held in memory between runs, and a
restart reads no rows: its watermark and the sums are in the database.

Names come from the application, so they are bounded: cleaned (lower case, `[a-z0-9_.@-]`,
cut to `external.max_name_length`) and at most `external.max_names` of them get series:
the most frequent in the longest window (trace counts from the sums), decided every run.
Further names fold into `external:other`, the sums of the folded names added together
(each folded result one value: a trace with two folded scores counts twice), logged once
when that starts and counted like folded label values:
`ragpulse_label_values_{seen,kept,folded_total}{job="external",label="metric"}`.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Row, Select, select
from sqlalchemy.orm import Session

from collector.jobs.buckets import store as bucket_store
from collector.jobs.buckets.history import BucketHistory
from collector.jobs.buckets.window_source import from_db
from collector.jobs.catalog.external_windows import NamesSpec, external_points
from collector.jobs.recording.cursor import BACKLOG_CHUNK, Span, TraceCursor, epoch
from collector.jobs.run.definition import JobDefinition, JobEnvironment, JobReport
from collector.jobs.run.engine import IncrementalJob
from collector.jobs.run.evaluation import rows_by_id
from collector.jobs.run.job_state import load_state, record_run
from collector.jobs.run.publish import quality_points
from collector.jobs.run.result_store import write_results
from collector.jobs.windows.aggregate import WindowAggregate
from collector.jobs.windows.labels import Folding, warn_folding
from collector.jobs.windows.window import Window
from collector.settings import Settings
from collector.store.models import Trace
from evaluators.outcome import Failed, Outcome, Score, Skipped

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


_ROWS = select(
    Trace.id,
    Trace.trace_id,
    Trace.timestamp,
    Trace.updated_at,
    Trace.received_at,
    Trace.tags,
    Trace.model,
    Trace.question,
    Trace.evaluations,
)
"""What `record_each` stores of a trace."""


def candidates(query: Select[Any]) -> Select[Any]:
    """The traces that carry evaluations."""
    return query.where(Trace.evaluations.is_not(None))


def trace_outcomes(evaluations: Any, max_length: int) -> dict[str, Outcome]:
    """One trace's outcomes by cleaned name (two raw spellings of one name: the first in
    sorted order counts); empty when `evaluations` is not an object."""
    out: dict[str, Outcome] = {}
    if not isinstance(evaluations, Mapping):
        return out
    for raw, result in sorted(evaluations.items(), key=lambda kv: str(kv[0])):
        name = metric_name(raw, max_length)
        outcome = outcome_of(result)
        if name is not None and outcome is not None and name not in out:
            out[name] = outcome
    return out


class ExternalJob(IncrementalJob):
    """See the module docstring: a `TraceCursor` counting every name it stores, windows
    from the sums. What it keeps between runs: its watermark, the foldings of the last run
    (to log changes once) and the published points."""

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
        self._names = NamesSpec(max_names, PREFIX + OTHER)
        self._cursor = TraceCursor(
            self.name,
            None,
            env.group_labels,
            self._longest,
            env.slice_dimensions,
            env.version_sources,
            env.label_limits.max_length,
        )
        self._loaded = False
        self._labels: tuple[Folding, ...] = ()
        self._labels_logged: tuple[Folding, ...] = ()
        self.folded = 0
        """How many names folded into `external:other` in the last run."""

    def run(self, now: datetime | None = None) -> JobReport:
        started = time.perf_counter()
        now = now or datetime.now(UTC)
        with self.env.session_factory() as session:
            state = load_state(session, self.name)
            self._cursor.load(session, state, now)
            if not self._loaded:
                self._loaded = True
                since = now - timedelta(seconds=self._longest)
                if not bucket_store.has_outcomes(session, self.name, since):
                    # nothing stored (a first start, or the upgrade from the in-memory job):
                    # the whole longest window, whatever the watermark says
                    self._cursor.watermark = None
            new = self._evaluate_backlog(session, now)
            points = self.points_at(session, now)
            written = write_results(session, self.name, now, self.env.retention, points)
            self._publish = quality_points(self.name, points, epoch(now))
            names = self._labels[-1]
            message = f"{new} new or updated traces, {len(names.kept)} names"
            if names.folded:
                message += f", {names.folded} folded into {PREFIX}{OTHER}"
            state = load_state(session, self.name)
            if self._cursor.watermark is not None:
                state.watermark = self._cursor.watermark
            record_run(session, state, now, message, started=started)
        return JobReport(
            self.name,
            "ok",
            new,
            written,
            time.perf_counter() - started,
            message,
            labels=self._labels,
        )

    def load_history(self, now: datetime, *, evaluate: bool, span: Span | None = None) -> int:
        """Store the outcomes of the longest window's traces that have none yet (`span`:
        with timestamps in it only)."""
        if not evaluate:
            return 0
        with self.env.session_factory() as session:
            return self._evaluate_backlog(session, now, span)

    def points_at(
        self, session: Session, at: datetime, history: BucketHistory | None = None
    ) -> list[tuple[Window, WindowAggregate]]:
        """The kept names' and `external:other`'s windows at `at`, from the bucket sums."""
        source = from_db(session, self.name) if history is None else history.source(session)
        env = self.env
        made = external_points(
            session,
            self.name,
            source,
            env.windows,
            env.group_labels,
            env.label_limits,
            epoch(at),
            self._names,
        )
        self._labels = (*made.labels.values(), made.names)
        self._warn(made.names, made.examples)
        return made.points

    # -- steps ----------------------------------------------------------------------------

    def _evaluate_backlog(self, session: Session, now: datetime, span: Span | None = None) -> int:
        """Store the outcomes of the traces pending, `BACKLOG_CHUNK` at a time, each chunk
        committed before the next is read. Traces stored."""
        done = 0
        since = now - timedelta(seconds=self._longest)
        while True:
            pending = self._cursor.pending(session, now, candidates, None, None, span)
            rows = self._fetch(session, [p.row_id for p in pending], since)
            if rows:
                outcomes = [trace_outcomes(r.evaluations, self.max_name_length) for r in rows]
                self._cursor.record_each(session, rows, outcomes)
            session.commit()
            done += len(rows)
            if len(pending) < BACKLOG_CHUNK:
                return done

    def _fetch(self, session: Session, ids: Sequence[int], since: datetime) -> list[Row[Any]]:
        """The rows of `ids` with what `record_each` stores, oldest update first."""
        return rows_by_id(session, _ROWS, ids, since)

    def _warn(self, names: Folding, examples: Sequence[str]) -> None:
        """Log when a group label starts folding, and when names start (or stop) folding
        into `external:other`."""
        labels = self._labels[:-1]
        warn_folding(self.name, self._labels_logged, labels)
        self._labels_logged = labels
        if names.folded and not self.folded:
            logger.warning(
                "job external: %d evaluation names in the longest window, more than "
                "external.max_names (%d): %d fold into %s%s (%s%s)",
                names.seen,
                self.max_names,
                names.folded,
                PREFIX,
                OTHER,
                ", ".join(examples),
                ", ..." if names.folded > len(examples) else "",
            )
        elif self.folded and not names.folded:
            logger.info("job external: no evaluation name folds into %s%s any more", PREFIX, OTHER)
        self.folded = names.folded
