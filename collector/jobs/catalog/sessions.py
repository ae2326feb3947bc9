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
4. with a judge configured, also judges a sample of the closed sessions (their session
   id's hash, `sessions.judge_rate`; at most `sessions.judge_per_run` a run) for
   completeness and frustration (`session_judging`), stored on the first turn's row with
   the session metrics, so a reopened session is judged again and counts once; sampled
   sessions stored without them (budget spent, judge calls waiting for a retry of a
   transient failure) are judged by later runs;
5. aggregates the windows and detectors from the sums like every per-sample metric.

Nothing is held between runs but the watermark and last run time (`job_state`) and the
stored rows, so a restarted or another worker's instance carries on where it stopped, and
two instances over the same database compute the same rows (the runs are serialized by
the job's lock; every write is an idempotent upsert). Sessions that started more than
`sessions.lookback` ago are not closed or reopened any more.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, NamedTuple, cast

import numpy as np
from sqlalchemy import Row
from sqlalchemy.orm import Session

from collector.jobs.buckets.history import BucketHistory
from collector.jobs.buckets.window_points import foldings, window_points
from collector.jobs.buckets.window_source import from_db
from collector.jobs.catalog.session_judging import (
    judge_all,
    judged_outcomes,
    judged_signature,
    owed,
    sampled,
)
from collector.jobs.catalog.session_rows import (
    JUDGED,
    TurnRow,
    feedback_score,
    judged_bad,
    remove_rows,
    stored_metrics,
    stored_versions,
    turn_outcomes,
)
from collector.jobs.drift.detector import MetricFacts
from collector.jobs.outcomes.retry import RetryPolicy
from collector.jobs.recording.cursor import GRACE, Span, TraceCursor, epoch
from collector.jobs.recording.observers import Evaluated
from collector.jobs.run.definition import JobDefinition, JobEnvironment, JobReport
from collector.jobs.run.engine import IncrementalJob
from collector.jobs.run.evaluation import judge_unreachable
from collector.jobs.run.job_state import load_state, record_run
from collector.jobs.run.publish import quality_points
from collector.jobs.run.result_store import write_results
from collector.jobs.windows.aggregate import WindowAggregate
from collector.jobs.windows.labels import Folding, warn_folding
from collector.jobs.windows.window import Window
from collector.settings import SessionSettings, Settings, parse_duration
from collector.store.conversations import pages, touched, turns_of
from evaluators.conversation_metrics import (
    JUDGED_SESSION_METRICS,
    PROPORTIONS,
    SESSION_METRICS,
    TURN_METRICS,
)
from evaluators.conversations import Turn, outcome_signature, re_ask_threshold, session_outcome
from evaluators.embedder import TextEncoder
from evaluators.outcome import Outcome
from evaluators.registry import describe

logger = logging.getLogger(__name__)

NAME = "sessions"
CONVERSATION_METRICS = SESSION_METRICS + TURN_METRICS + JUDGED_SESSION_METRICS
"""What the job stores and aggregates (its definition's metrics)."""
METRICS: tuple[str, ...] = ()
"""No automatic row of the overview dashboard (`dashboards/metrics_view.py` builds one per
job listing `METRICS`): the seven metrics' generic panels would push the overview past
Kubernetes' ConfigMap size limit; the conversation row is built by a section of
`dashboards/panels/`."""
NO_EMBEDDER = "no embedder configured (re-asks are found by the questions' embeddings)"


class Due(NamedTuple):
    """A closed session to store: its id, its turns (`kept`), the stored turns past its
    limit (`extra`, their rows removed) and whether the judge rates it this run."""

    sid: str
    kept: list[Row[Any]]
    extra: list[Row[Any]]
    judge: bool


def definition(settings: Settings) -> JobDefinition:
    return JobDefinition(
        name=NAME,
        metrics=CONVERSATION_METRICS,
        description="conversation outcomes of closed sessions: resolved, re-asked, escalated",
        factory=partial(SessionsJob, sessions=settings.sessions),
    )


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
        self.judge_rate = cfg.judge_rate
        self.judge_per_run = cfg.judge_per_run
        self._judge_left = 0
        self._judged = 0
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
        self._evaluated: list[Evaluated] = []
        if env.judge is not None:
            self._cursor.retry = RetryPolicy(env.judge_transient_retries)

    @property
    def judging(self) -> bool:
        """True when closed sessions are sampled for the judge (one configured, rate > 0)."""
        return self.env.judge is not None and self.judge_rate > 0.0

    @property
    def threshold(self) -> float:
        """The embedder's calibrated paraphrase cosine: the reference point of the re-ask
        decision (`evaluators.conversations.decision`), not a bar by itself."""
        model = getattr(self.env.embedder, "model_name", None)
        return re_ask_threshold(self.env.options.metric_options, model)

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
            self._judge_left, self._judged = self.judge_per_run, 0
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
            message = f"{closed} sessions closed, {self._judged} judged"
            record_run(session, state, now, message, started=started)
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
        owed_ids: set[str] = set()
        if self.judging:
            first, self._cursor.retrying = owed(session, self.name, since, self.judge_rate)
            owed_ids = set(first)
            ids = sorted(owed_ids.union(ids))
        done = 0
        for page in pages(ids):
            done += self._close_page(session, embedder, page, now, owed_ids)
            session.commit()
            self.notify()
        if newest is not None and (
            self._cursor.watermark is None or epoch(newest) > epoch(self._cursor.watermark)
        ):
            self._cursor.watermark = newest
        return done

    def _close_page(
        self,
        session: Session,
        embedder: TextEncoder,
        ids: Sequence[str],
        now: datetime,
        owed_ids: set[str],
    ) -> int:
        """Close the sessions of `ids` that are closed now and not stored as they are, and
        those of `owed_ids` the judge rates this run. Sessions stored."""
        lookback_s = self.lookback.total_seconds()
        # twice the look-back: a session that started before it is seen to have
        found = turns_of(session, ids, now - 2 * self.lookback, 2 * self.max_turns)
        closed: list[tuple[str, list[Row[Any]], list[Row[Any]]]] = []
        for sid in ids:
            rows = found.get(sid)
            if not rows or epoch(rows[0].timestamp) < epoch(now) - lookback_s:
                continue
            end = epoch(rows[0].timestamp) + lookback_s
            kept = [r for r in rows if epoch(r.timestamp) <= end][: self.max_turns]
            if self._is_closed(kept, now):
                closed.append((sid, kept, rows[len(kept) :]))
        stored = stored_versions(session, self.name, [kept[0].trace_id for _, kept, _ in closed])
        due: list[Due] = []
        for sid, kept, extra in closed:
            changed = stored.get(kept[0].trace_id) != _version(kept)
            if not changed and sid not in owed_ids:
                continue
            judge = self._judge_left > 0 and self.judging and sampled(sid, self.judge_rate)
            if changed or judge:
                self._judge_left -= judge
                due.append(Due(sid, kept, extra, judge))
        if not due:
            return 0
        self._record(session, embedder, due)
        return len(due)

    def _is_closed(self, kept: Sequence[Row[Any]], now: datetime) -> bool:
        """At the turn limit, idle since its last turn, or followed for the look-back."""
        at = epoch(now)
        idle = epoch(kept[-1].timestamp) + self.idle.total_seconds() <= at
        over = epoch(kept[0].timestamp) + self.lookback.total_seconds() <= at
        return len(kept) >= self.max_turns or idle or over

    def _record(
        self,
        session: Session,
        embedder: TextEncoder,
        due: Sequence[Due],
    ) -> None:
        """Compute the outcomes of `due` sessions (and the judged outcome of those the
        judge rates) and record them; turns beyond a session's limit (pushed out by a late
        earlier turn) lose their stored rows."""
        questions = [r.question for d in due for r in d.kept]
        vectors = np.asarray(embedder.encode(questions), dtype=np.float64)
        all_ids = [r.trace_id for d in due for r in d.kept]
        bad = judged_bad(session, self._judge_jobs(), all_ids)
        threshold = self.threshold
        rows: list[TurnRow] = []
        outcomes: list[dict[str, Outcome]] = []
        to_judge: list[tuple[int, list[Turn]]] = []  # (index of the first turn's row, turns)
        start = 0
        for d in due:
            kept = d.kept
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
            if d.judge:
                to_judge.append((len(outcomes), turns))
            outcomes.extend(turn_outcomes(outcome))
        if to_judge and self.env.judge is not None:
            found = judge_all(self.env.judge, [turns for _, turns in to_judge])
            made = [judged_outcomes(j) for j in found]
            if judge_unreachable({"judged": [o for m in made for o in m.values()]}):
                # an outage measured nothing: the sessions stay owed, their retries unused
                logger.warning(
                    "sessions: the judge could not be reached for any of %d sessions; "
                    "a later run judges them",
                    len(made),
                )
            else:
                for (at, _), judged in zip(to_judge, made, strict=True):
                    outcomes[at].update(judged)
                self._judged += len(made)
        before = stored_metrics(session, self.name, all_ids)
        evaluated = self._cursor.record_each(session, cast(Sequence[Row[Any]], rows), outcomes)
        remove_rows(
            session,
            self.name,
            CONVERSATION_METRICS,
            [r.trace_id for d in due for r in d.extra],
        )
        # the observers (SLO events, score histograms) hear of each trace's metric once:
        # a recomputed session's outcomes were handed over when it first closed
        for e in evaluated:
            told = before.get(e.trace_id, frozenset())
            fresh = {m: o for m, o in e.outcomes.items() if m not in told}
            if fresh:
                self._evaluated.append(replace(e, outcomes=fresh))

    def _judge_jobs(self) -> list[str]:
        """The jobs storing the judge metrics that make an answer bad."""
        return sorted({j for m in JUDGED for j in self.env.options.metric_jobs.get(m, ())})

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
        sign = outcome_signature(env.options.metric_options, model)
        signatures = dict.fromkeys(CONVERSATION_METRICS, sign)
        signatures.update(dict.fromkeys(JUDGED_SESSION_METRICS, judged_signature(env.judge)))
        points = window_points(
            source,
            env.windows,
            CONVERSATION_METRICS,
            {m: m in PROPORTIONS for m in CONVERSATION_METRICS},
            signatures,
            kept,
            at_s,
        )
        if env.drift is not None:
            points += self._drift_at(session, at_s, kept, history)
        return points


def _version(kept: Sequence[Row[Any]]) -> float:
    """A session's version: the newest `updated_at` of its turns, in epoch seconds."""
    return max(epoch(r.updated_at) for r in kept)
