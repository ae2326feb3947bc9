"""Closed conversations as the `sessions` job stored them, for `ragpulse sessions`.

A closed session is the `job_outcomes` row of the `sessions` job on its first turn (it
carries the session metrics, `collector.jobs.catalog.sessions`); its turns are the rows of
that job on the session's other traces. `closed_sessions` reads the sessions of a window a
page at a time (ordered by their start), each with its turns in order, their per-turn
outcomes and every score the other jobs stored for them; `one_session` reads one by its
session id. Nothing here computes an outcome: a session not closed yet has none.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Text, and_, cast, select
from sqlalchemy.orm import Session

from collector.jobs.outcomes.codec import read_outcomes
from collector.store.conversations import turns_of
from collector.store.models import JobOutcome, Trace
from evaluators.conversation_metrics import (
    JUDGED_SESSION_METRICS,
    SESSION_ABANDONED,
    SESSION_ESCALATED,
    SESSION_METRICS,
    SESSION_RESOLVED,
    TURN_ESCALATION,
    TURN_RE_ASKED,
    TURNS_TO_RESOLUTION,
)

JOB = "sessions"
PAGE = 200
"""Sessions read at a time."""
MAX_TURNS = 1000
"""At most this many turns are read of one session (the largest `sessions.max_turns`)."""
TURN_KEYS = (TURN_RE_ASKED, TURN_ESCALATION)
JUDGED_PREFIX = "session_"
"""The judged outcomes (`JUDGED_SESSION_METRICS`: completeness, frustration) stored on a
session's row when the judge rated it, shown without this prefix."""


@dataclass(frozen=True)
class TurnView:
    """One turn: its trace, question and answer, whether the sessions job counted it, its
    per-turn outcomes and every score other jobs stored for it (metric -> value)."""

    trace_id: str
    ts: datetime
    question: str
    answer: str | None
    counted: bool
    re_asked: bool
    escalation: bool
    scores: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class SessionView:
    """A closed session: its outcome (from its first turn's row) and its turns in order."""

    session_id: str
    first_trace_id: str
    started: datetime
    outcome: Mapping[str, Any]
    """The session metrics as stored (numbers, or `{"skipped": reason}`)."""
    groups: Mapping[str, Any]
    turns: tuple[TurnView, ...]

    @property
    def resolved(self) -> bool:
        return self.outcome.get(SESSION_RESOLVED) == 1.0

    @property
    def escalated(self) -> bool:
        return self.outcome.get(SESSION_ESCALATED) == 1.0

    @property
    def abandoned(self) -> bool:
        return self.outcome.get(SESSION_ABANDONED) == 1.0

    @property
    def re_asks(self) -> int:
        """Answers of the session followed by a re-ask."""
        return sum(t.re_asked for t in self.turns if t.counted)

    @property
    def counted_turns(self) -> int:
        return sum(t.counted for t in self.turns)

    @property
    def turns_to_resolution(self) -> int | None:
        value = self.outcome.get(TURNS_TO_RESOLUTION)
        return int(value) if isinstance(value, float | int) else None

    @property
    def judged(self) -> dict[str, Any]:
        return {
            k.removeprefix(JUDGED_PREFIX): v
            for k, v in self.outcome.items()
            if k in JUDGED_SESSION_METRICS
        }

    def badness(self) -> tuple[int, int, int, int, int]:
        """Sort key, worst first: unresolved, escalated, abandoned, more re-asks, longer."""
        return (
            int(self.resolved),
            -int(self.escalated),
            -int(self.abandoned),
            -self.re_asks,
            -self.counted_turns,
        )


def _utc(ts: datetime) -> datetime:
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)


def _session_rows(
    session: Session, since: datetime, until: datetime, after: tuple[datetime, str] | None
) -> list[tuple[str, datetime, Any, Any]]:
    """A page of (first trace id, ts, groups, outcomes) of the sessions started in the
    window, in start order, after `after` (the last row of the previous page)."""
    query = select(
        JobOutcome.trace_id,
        JobOutcome.ts,
        cast(JobOutcome.groups, Text),
        cast(JobOutcome.outcomes, Text),
    ).where(
        JobOutcome.job == JOB,
        JobOutcome.ts >= since,
        JobOutcome.ts < until,
        cast(JobOutcome.outcomes, Text).like(f'%"{SESSION_RESOLVED}"%'),
    )
    if after is not None:
        ts, trace_id = after
        query = query.where(
            (JobOutcome.ts > ts) | and_(JobOutcome.ts == ts, JobOutcome.trace_id > trace_id)
        )
    query = query.order_by(JobOutcome.ts, JobOutcome.trace_id).limit(PAGE)
    return [(r[0], r[1], r[2], r[3]) for r in session.execute(query)]


Stored = dict[str, dict[str, dict[str, Any]]]
"""trace_id -> job -> stored outcomes."""


def _outcomes_of(session: Session, trace_ids: Sequence[str]) -> Stored:
    """trace_id -> job -> stored outcomes, of every job."""
    out: Stored = {}
    if not trace_ids:
        return out
    query = select(JobOutcome.trace_id, JobOutcome.job, cast(JobOutcome.outcomes, Text)).where(
        JobOutcome.trace_id.in_(sorted(set(trace_ids)))
    )
    for trace_id, job, outcomes in session.execute(query):
        out.setdefault(trace_id, {})[job] = dict(read_outcomes(outcomes))
    return out


def _views(session: Session, rows: Sequence[tuple[str, datetime, Any, Any]]) -> list[SessionView]:
    """The sessions of `rows` (first trace id, ts, groups, outcomes) with their turns."""
    from collector.jobs.outcomes.codec import read_groups

    firsts = [r[0] for r in rows]
    query = select(Trace.trace_id, Trace.session_id).where(Trace.trace_id.in_(firsts))
    sids: dict[str, str | None] = {t: s for t, s in session.execute(query)}
    starts = [_utc(r[1]) for r in rows]
    turns = (
        turns_of(session, [s for s in sids.values() if s is not None], min(starts), MAX_TURNS)
        if starts
        else {}
    )
    stored = _outcomes_of(session, [t.trace_id for ts in turns.values() for t in ts])
    out = []
    for (first, _, groups, outcomes), start in zip(rows, starts, strict=True):
        sid = sids.get(first)
        if sid is None:
            continue
        outcome = read_outcomes(outcomes)
        views = []
        for t in turns.get(sid, []):
            if _utc(t.timestamp) < start:
                continue
            jobs = stored.get(t.trace_id, {})
            own = jobs.get(JOB)
            views.append(
                TurnView(
                    trace_id=t.trace_id,
                    ts=_utc(t.timestamp),
                    question=t.question,
                    answer=t.answer,
                    counted=own is not None,
                    re_asked=(own or {}).get(TURN_RE_ASKED) == 1.0,
                    escalation=(own or {}).get(TURN_ESCALATION) == 1.0,
                    scores=_scores(jobs),
                )
            )
        out.append(
            SessionView(
                session_id=sid,
                first_trace_id=first,
                started=start,
                outcome={k: v for k, v in outcome.items() if k not in TURN_KEYS},
                groups=read_groups(groups) or {},
                turns=tuple(views),
            )
        )
    return out


def _scores(jobs: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """The scored metrics of other jobs' outcomes (skips and errors left out)."""
    out: dict[str, float] = {}
    for job, outcomes in sorted(jobs.items()):
        if job == JOB:
            continue
        for metric, value in outcomes.items():
            if isinstance(value, float | int) and metric not in SESSION_METRICS:
                out.setdefault(metric, float(value))
    return out


def closed_sessions(session: Session, since: datetime, until: datetime) -> Iterator[SessionView]:
    """Every closed session that started in [since, until), in start order, read a page
    at a time."""
    after: tuple[datetime, str] | None = None
    while True:
        rows = _session_rows(session, since, until, after)
        if not rows:
            return
        yield from _views(session, rows)
        if len(rows) < PAGE:
            return
        after = (rows[-1][1], rows[-1][0])


def one_session(session: Session, session_id: str) -> tuple[SessionView | None, list[Any]]:
    """A session's stored outcome (None: not closed yet, or unknown) and its turns as
    stored traces (empty: no trace has that session id)."""
    turns = turns_of(session, [session_id], datetime(1970, 1, 1, tzinfo=UTC), MAX_TURNS).get(
        session_id, []
    )
    if not turns:
        return None, []
    ids = [t.trace_id for t in turns]
    query = select(
        JobOutcome.trace_id,
        JobOutcome.ts,
        cast(JobOutcome.groups, Text),
        cast(JobOutcome.outcomes, Text),
    ).where(JobOutcome.job == JOB, JobOutcome.trace_id.in_(ids))
    firsts = [tuple(r) for r in session.execute(query) if SESSION_RESOLVED in read_outcomes(r[3])]
    if not firsts:
        return None, turns
    views = _views(session, firsts)
    return (views[0] if views else None), turns
