"""Conversations: the outcome of every closed session, as monitored series (issue 42).

A session (the traces sharing a `session_id`, in time order) is closed `sessions.idle`
after its last turn (by the turns' timestamps), or at once when it has `sessions.max_turns`
turns. Every run
1. lists the sessions that may need their outcome (`collector.store.conversations.touched`):
   those with a turn stored or changed since the job's watermark (minus `GRACE`), and those
   whose last turn went idle since its last run;
2. reads their turns a page of sessions at a time, and keeps those closed now whose stored
   outcome is missing or of an older version (the newest `updated_at` of its turns: a late
   turn, or feedback folded into a turn, makes a new one);
3. computes their outcome (`evaluators.conversations.session_outcome`: re-asks from the
   questions' embeddings at the embedding model's calibrated cache threshold, escalations,
   abandonment, feedback) and stores it through the per-trace machinery
   (`TraceCursor.record_each`): one `job_outcomes` row per turn (`turn_re_asked`,
   `turn_escalation`, at the turn's time), the first turn's row also carrying the session's
   metrics (`session_resolved`, `session_re_asked`, `session_escalated`,
   `session_abandoned`, `turns_to_resolution`, at the session's start) and the session's
   version. A recomputed session replaces its rows' contributions to the bucket sums in
   the same transaction, so it counts once in every window, group, detector and SLO;
4. aggregates the windows and detectors from the sums like every per-sample metric.

Nothing is held between runs but the watermark and last run time (`job_state`) and the
stored rows, so a restarted or another worker's instance carries on where it stopped, and
two instances over the same database compute the same rows (the runs are serialized by
the job's lock; every write is an idempotent upsert). Sessions that started more than
`sessions.lookback` ago are not closed or reopened any more.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, cast

import numpy as np
from sqlalchemy import Row, Text, delete, select
from sqlalchemy import cast as sql_cast
from sqlalchemy.orm import Session

from collector.jobs.buckets.bulk_write import apply_changes
from collector.jobs.buckets.contributions import Contributions
from collector.jobs.buckets.history import BucketHistory
from collector.jobs.buckets.window_points import foldings, window_points
from collector.jobs.buckets.window_source import from_db
from collector.jobs.drift.detector import MetricFacts
from collector.jobs.outcomes.codec import read_groups, read_outcomes
from collector.jobs.recording.cursor import GRACE, Span, TraceCursor, epoch
from collector.jobs.run.definition import JobDefinition, JobEnvironment, JobReport
from collector.jobs.run.engine import IncrementalJob
from collector.jobs.run.job_state import load_state, record_run
from collector.jobs.run.publish import quality_points
from collector.jobs.run.result_store import write_results
from collector.jobs.windows.aggregate import WindowAggregate
from collector.jobs.windows.labels import Folding, warn_folding
from collector.jobs.windows.window import Window
from collector.settings import SessionSettings, Settings, parse_duration
from collector.store.conversations import pages, touched, turns_of
from collector.store.models import JobOutcome
from evaluators.conversation_metrics import (
    PROPORTIONS,
    SESSION_ABANDONED,
    SESSION_ESCALATED,
    SESSION_METRICS,
    SESSION_RE_ASKED,
    SESSION_RESOLVED,
    TURN_ESCALATION,
    TURN_METRICS,
    TURN_RE_ASKED,
    TURNS_TO_RESOLUTION,
)
from evaluators.conversations import SessionOutcome, Turn, session_outcome
from evaluators.embedder import TextEncoder
from evaluators.outcome import Outcome, Score, Skipped
from evaluators.registry import describe
from evaluators.signature import Signature
from evaluators.thresholds import similarity_threshold, threshold_signature

logger = logging.getLogger(__name__)

NAME = "sessions"
CONVERSATION_METRICS = SESSION_METRICS + TURN_METRICS
"""What the job stores and aggregates (its definition's metrics)."""
METRICS: tuple[str, ...] = ()
"""No automatic row of the overview dashboard (`dashboards/metrics_view.py` builds one per
job listing `METRICS`): the seven metrics' generic panels would push the overview past
Kubernetes' ConfigMap size limit; the conversation row is built by a section of
`dashboards/panels/`."""
NO_EMBEDDER = "no embedder configured (re-asks are found by the questions' embeddings)"
NOT_RESOLVED = "not resolved"
THRESHOLD = "cache_similarity_threshold"
"""Two questions of a session this similar are one asked again: the semantic cache's."""
JUDGED = ("answer_relevance", "e2e_score", "faithfulness_rating")
"""Judge metrics whose low score (below `BAD_SCORE`) makes an answer bad (abandonment)."""
BAD_SCORE = 0.5


def definition(settings: Settings) -> JobDefinition:
    return JobDefinition(
        name=NAME,
        metrics=CONVERSATION_METRICS,
        description="conversation outcomes of closed sessions: resolved, re-asked, escalated",
        factory=partial(SessionsJob, sessions=settings.sessions),
    )


def feedback_score(rating: float | None) -> float | None:
    """A stored feedback rating as the detectors read it (negative = bad): ratings are on
    the 1-5 scale of the demo and the docs, 3 neutral (`(rating - 3) / 2`)."""
    return None if rating is None else (float(rating) - 3.0) / 2.0


@dataclass(frozen=True)
class TurnRow:
    """What `TraceCursor.record_each` stores of a turn (`updated_at`: the version the row
    stands for, the session's own on its first turn)."""

    trace_id: str
    timestamp: datetime
    updated_at: datetime
    tags: Mapping[str, Any] | None
    model: str | None
    question: str


def turn_outcomes(outcome: SessionOutcome) -> list[dict[str, Outcome]]:
    """One row of outcomes per turn; the first also carries the session's."""
    rows: list[dict[str, Outcome]] = [
        {
            TURN_RE_ASKED: Score(float(t.re_asked)),
            TURN_ESCALATION: Score(float(t.escalation)),
        }
        for t in outcome.turns
    ]
    steps = outcome.turns_to_resolution
    rows[0].update(
        {
            SESSION_RESOLVED: Score(float(outcome.resolved)),
            SESSION_RE_ASKED: Score(float(outcome.re_asks > 0)),
            SESSION_ESCALATED: Score(float(outcome.escalated)),
            SESSION_ABANDONED: Score(float(outcome.abandoned)),
            TURNS_TO_RESOLUTION: Skipped(NOT_RESOLVED) if steps is None else Score(float(steps)),
        }
    )
    return rows


class SessionsJob(IncrementalJob):
    """Closes sessions and stores their outcomes (module docstring)."""

    def __init__(
        self,
        definition: JobDefinition,
        env: JobEnvironment,
        *,
        sessions: SessionSettings | None = None,
    ) -> None:
        self.definition = definition
        self.env = env
        self.name = definition.name
        cfg = sessions or SessionSettings()
        self.idle = timedelta(seconds=parse_duration(cfg.idle))
        self.lookback = timedelta(seconds=parse_duration(cfg.lookback))
        self.max_turns = cfg.max_turns
        self._longest = max(w.seconds for w in env.windows)
        self._cursor = TraceCursor(
            self.name,
            CONVERSATION_METRICS,
            env.group_labels,
            self._longest,
            env.slice_dimensions,
            env.version_sources,
            env.label_limits.max_length,
        )
        self.per_sample = []
        self.dataset = []
        facts = {m: describe(m) for m in CONVERSATION_METRICS}
        self._facts = [MetricFacts(m, f.direction or "none", f.unit) for m, f in facts.items()]
        self._drift_cache = None
        self._labels: tuple[Folding, ...] = ()
        self._labels_logged: tuple[Folding, ...] = ()
        self._last_folds: list[Folding] = []
        self._evaluated = []

    @property
    def threshold(self) -> float:
        """The cosine above which a later question re-asks an earlier one."""
        model = getattr(self.env.embedder, "model_name", None)
        return similarity_threshold(self.env.options.metric_options, THRESHOLD, model)

    def run(self, now: datetime | None = None) -> JobReport:
        started = time.perf_counter()
        now = now or datetime.now(UTC)
        embedder = self.env.embedder
        if embedder is None:
            written = self._record_skip(now, NO_EMBEDDER)
            return JobReport(
                self.name, "skipped", 0, written, time.perf_counter() - started, NO_EMBEDDER
            )
        with self.env.session_factory() as session:
            state = load_state(session, self.name)
            self._cursor.load(session, state, now)
            closed = self._close(session, embedder, now, state.watermark, state.last_run_at)
            points = self.points_at(session, now)
            written = write_results(session, self.name, now, self.env.retention, points)
            self._publish = quality_points(self.name, points, epoch(now))
            self._labels = tuple(self._last_folds)
            warn_folding(self.name, self._labels_logged, self._labels)
            self._labels_logged = self._labels
            state = load_state(session, self.name)
            if self._cursor.watermark is not None:
                state.watermark = self._cursor.watermark
            record_run(session, state, now, f"{closed} sessions closed", started=started)
        return self.report(closed, written, started)

    def load_history(self, now: datetime, *, evaluate: bool, span: Span | None = None) -> int:
        """Sessions are closed by the scheduled runs only; a back-fill reads their sums."""
        return 0

    # -- steps ------------------------------------------------------------------------------

    def _close(
        self,
        session: Session,
        embedder: TextEncoder,
        now: datetime,
        watermark: datetime | None,
        last_run: datetime | None,
    ) -> int:
        """Store the outcome of every session closed now whose stored one is missing or
        older, a page of sessions at a time (each committed). Sessions stored."""
        since = now - self.lookback
        after = None if watermark is None else watermark - GRACE
        idle_from = None if last_run is None else last_run - self.idle - GRACE
        ids, newest = touched(session, since, after, idle_from, now - self.idle)
        done = 0
        for page in pages(ids):
            done += self._close_page(session, embedder, page, now)
            session.commit()
        if newest is not None and (
            self._cursor.watermark is None or epoch(newest) > epoch(self._cursor.watermark)
        ):
            self._cursor.watermark = newest
        return done

    def _close_page(
        self, session: Session, embedder: TextEncoder, ids: Sequence[str], now: datetime
    ) -> int:
        """Close the sessions of `ids` that are closed now and not stored as they are."""
        lookback_s = self.lookback.total_seconds()
        # twice the look-back: a session that started before it is seen to have
        found = turns_of(session, ids, now - 2 * self.lookback, 2 * self.max_turns)
        due: list[tuple[list[Row[Any]], list[Row[Any]]]] = []
        for sid in ids:
            rows = found.get(sid)
            if not rows or epoch(rows[0].timestamp) < epoch(now) - lookback_s:
                continue
            end = epoch(rows[0].timestamp) + lookback_s
            kept = [r for r in rows if epoch(r.timestamp) <= end][: self.max_turns]
            if self._is_closed(kept, now):
                due.append((kept, rows[len(kept) :]))
        stored = self._versions(session, [kept[0].trace_id for kept, _ in due])
        due = [
            (kept, extra) for kept, extra in due if stored.get(kept[0].trace_id) != _version(kept)
        ]
        if not due:
            return 0
        self._record(session, embedder, due)
        return len(due)

    def _is_closed(self, kept: Sequence[Row[Any]], now: datetime) -> bool:
        if len(kept) >= self.max_turns:
            return True
        last = epoch(kept[-1].timestamp)
        return last + self.idle.total_seconds() <= epoch(now) or epoch(
            kept[0].timestamp
        ) + self.lookback.total_seconds() <= epoch(now)

    def _versions(self, session: Session, first_ids: Sequence[str]) -> dict[str, float]:
        """First trace id -> the version of the session outcome stored on its row."""
        if not first_ids:
            return {}
        query = select(
            JobOutcome.trace_id, JobOutcome.trace_updated_at, sql_cast(JobOutcome.outcomes, Text)
        ).where(JobOutcome.job == self.name, JobOutcome.trace_id.in_(first_ids))
        return {
            trace_id: epoch(updated)
            for trace_id, updated, outcomes in session.execute(query)
            if SESSION_RESOLVED in read_outcomes(outcomes)
        }

    def _record(
        self,
        session: Session,
        embedder: TextEncoder,
        due: Sequence[tuple[list[Row[Any]], list[Row[Any]]]],
    ) -> None:
        """Compute the outcomes of `due` sessions and record them; turns beyond a session's
        limit (pushed out by a late earlier turn) lose their stored rows."""
        questions = [r.question for kept, _ in due for r in kept]
        vectors = np.asarray(embedder.encode(questions), dtype=np.float64)
        all_ids = [r.trace_id for kept, _ in due for r in kept]
        bad = self._judged_bad(session, all_ids)
        threshold = self.threshold
        rows: list[TurnRow] = []
        outcomes: list[dict[str, Outcome]] = []
        start = 0
        for kept, _ in due:
            turns = [
                Turn(
                    trace_id=r.trace_id,
                    question=r.question,
                    answer=r.answer,
                    ts=epoch(r.timestamp),
                    tags=r.tags or {},
                    feedback=feedback_score(r.feedback_rating),
                    bad_answer=r.trace_id in bad or r.contexts == [],
                )
                for r in kept
            ]
            outcome = session_outcome(turns, vectors[start : start + len(kept)], threshold)
            start += len(kept)
            version = max((r.updated_at for r in kept), key=epoch)
            for i, r in enumerate(kept):
                rows.append(
                    TurnRow(
                        r.trace_id,
                        r.timestamp,
                        version if i == 0 else r.updated_at,
                        r.tags,
                        r.model,
                        r.question,
                    )
                )
            outcomes.extend(turn_outcomes(outcome))
        self._cursor.record_each(session, cast(Sequence[Row[Any]], rows), outcomes)
        self._remove(session, [r.trace_id for _, extra in due for r in extra])

    def _judged_bad(self, session: Session, trace_ids: Sequence[str]) -> set[str]:
        """The traces a judge job scored below `BAD_SCORE` on an answer metric."""
        jobs = sorted({j for m in JUDGED for j in self.env.options.metric_jobs.get(m, ())})
        if not jobs or not trace_ids:
            return set()
        query = select(JobOutcome.trace_id, sql_cast(JobOutcome.outcomes, Text)).where(
            JobOutcome.job.in_(jobs), JobOutcome.trace_id.in_(trace_ids)
        )
        bad = set()
        for trace_id, outcomes in session.execute(query):
            stored = read_outcomes(outcomes)
            values = [stored.get(m) for m in JUDGED]
            if any(isinstance(v, float | int) and v < BAD_SCORE for v in values):
                bad.add(trace_id)
        return bad

    def _remove(self, session: Session, trace_ids: Sequence[str]) -> None:
        """Delete this job's rows of `trace_ids` and take their contributions out."""
        if not trace_ids:
            return
        where = JobOutcome.job == self.name, JobOutcome.trace_id.in_(trace_ids)
        query = select(
            JobOutcome.ts, sql_cast(JobOutcome.groups, Text), sql_cast(JobOutcome.outcomes, Text)
        ).where(*where)
        delta = Contributions(frozenset(CONVERSATION_METRICS))
        found = session.execute(query).all()
        for ts, groups, outcomes in found:
            delta.add(epoch(ts), read_groups(groups), read_outcomes(outcomes), -1)
        if found:
            apply_changes(session, self.name, delta.changes())
            session.execute(delete(JobOutcome).where(*where))

    # -- windows ----------------------------------------------------------------------------

    def points_at(
        self, session: Session, at: datetime, history: BucketHistory | None = None
    ) -> list[tuple[Window, WindowAggregate]]:
        """The conversation metrics' windows and detectors at `at`, from the bucket sums."""
        at_s = epoch(at)
        env = self.env
        source = from_db(session, self.name) if history is None else history.source(session)
        kept = foldings(source.sums, at_s - self._longest, env.group_labels, env.label_limits)
        self._last_folds = list(kept.values())
        model = getattr(env.embedder, "model_name", None)
        sign = Signature(
            embedding_model=model,
            thresholds=threshold_signature("cache_hit_rate", env.options.metric_options, model),
        )
        points = window_points(
            source,
            env.windows,
            CONVERSATION_METRICS,
            {m: m in PROPORTIONS for m in CONVERSATION_METRICS},
            dict.fromkeys(CONVERSATION_METRICS, sign),
            kept,
            at_s,
        )
        if env.drift is not None:
            points += self._drift_at(session, at_s, kept, history)
        return points


def _version(kept: Sequence[Row[Any]]) -> float:
    """A session's version: the newest `updated_at` of its turns, in epoch seconds."""
    return max(epoch(r.updated_at) for r in kept)
