"""The `sessions` job's rows: what it stores per turn, and its reads and deletes of them.

A closed session is stored as one `job_outcomes` row per turn (`turn_outcomes`): the
first turn's row also carries the session metrics, and its `trace_updated_at` is the
session's version (the newest `updated_at` of its turns), so `stored_versions` says which
sessions are stored as they are now. `remove_rows` takes rows out with their bucket
contributions (turns pushed past the turn limit); `judged_bad` reads the judge jobs'
scores that make an answer bad for the abandonment rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Text, delete, select
from sqlalchemy import cast as sql_cast
from sqlalchemy.orm import Session

from collector.jobs.buckets.bulk_write import apply_changes
from collector.jobs.buckets.contributions import Contributions
from collector.jobs.outcomes.codec import is_waiting, read_groups, read_outcomes
from collector.jobs.recording.cursor import epoch
from collector.store.models import JobOutcome
from evaluators.conversation_metrics import (
    SESSION_ABANDONED,
    SESSION_ESCALATED,
    SESSION_RE_ASKED,
    SESSION_RESOLVED,
    TURN_ESCALATION,
    TURN_RE_ASKED,
    TURNS_TO_RESOLUTION,
)
from evaluators.conversations import SessionOutcome
from evaluators.outcome import Outcome, Score, Skipped

NOT_RESOLVED = "not resolved"
JUDGED = ("answer_relevance", "e2e_score", "faithfulness_rating")
"""Judge metrics whose low score (below `BAD_SCORE`) makes an answer bad (abandonment)."""
BAD_SCORE = 0.5


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


def stored_versions(session: Session, job: str, first_ids: Sequence[str]) -> dict[str, float]:
    """First trace id -> the version of the session outcome stored on its row."""
    if not first_ids:
        return {}
    query = select(
        JobOutcome.trace_id, JobOutcome.trace_updated_at, sql_cast(JobOutcome.outcomes, Text)
    ).where(JobOutcome.job == job, JobOutcome.trace_id.in_(first_ids))
    return {
        trace_id: epoch(updated)
        for trace_id, updated, outcomes in session.execute(query)
        if SESSION_RESOLVED in read_outcomes(outcomes)
    }


def stored_metrics(
    session: Session, job: str, trace_ids: Sequence[str]
) -> dict[str, frozenset[str]]:
    """trace_id -> the metrics `job` has stored for it (final: not waiting for a retry)."""
    query = select(JobOutcome.trace_id, sql_cast(JobOutcome.outcomes, Text)).where(
        JobOutcome.job == job, JobOutcome.trace_id.in_(trace_ids)
    )
    return {
        t: frozenset(m for m, v in read_outcomes(o).items() if not is_waiting(v))
        for t, o in session.execute(query)
    }


def judged_bad(session: Session, jobs: Sequence[str], trace_ids: Sequence[str]) -> set[str]:
    """The traces the judge `jobs` scored below `BAD_SCORE` on an answer metric."""
    if not jobs or not trace_ids:
        return set()
    query = select(JobOutcome.trace_id, sql_cast(JobOutcome.outcomes, Text)).where(
        JobOutcome.job.in_(jobs), JobOutcome.trace_id.in_(trace_ids)
    )
    bad: set[str] = set()
    for trace_id, outcomes in session.execute(query):
        stored = read_outcomes(outcomes)
        values = [stored.get(m) for m in JUDGED]
        if any(isinstance(v, float | int) and v < BAD_SCORE for v in values):
            bad.add(trace_id)
    return bad


def remove_rows(
    session: Session, job: str, metrics: Sequence[str], trace_ids: Sequence[str]
) -> None:
    """Delete `job`'s rows of `trace_ids` and take their contributions out."""
    if not trace_ids:
        return
    where = JobOutcome.job == job, JobOutcome.trace_id.in_(trace_ids)
    query = select(
        JobOutcome.ts, sql_cast(JobOutcome.groups, Text), sql_cast(JobOutcome.outcomes, Text)
    ).where(*where)
    delta = Contributions(frozenset(metrics))
    found = session.execute(query).all()
    for ts, groups, outcomes in found:
        delta.add(epoch(ts), read_groups(groups), read_outcomes(outcomes), -1)
    if found:
        apply_changes(session, job, delta.changes())
        session.execute(delete(JobOutcome).where(*where))
