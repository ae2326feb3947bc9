"""The conversations of a window in numbers, for the report's conversations section.

Reads the closed sessions (`collector.jobs.queries.sessions.closed_sessions`) of a window
once, keeping counts and the `worst` sessions only (bounded memory): the shares of
sessions resolved, re-asked, escalated and abandoned with 95% Wilson intervals, the share
of answers followed by a re-ask, and the mean turns to resolution of the resolved ones
with a t interval. Nothing is recomputed: these are the sessions job's stored outcomes.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from collector.jobs.queries.sessions import SessionView, closed_sessions
from evaluators.aggregate import t_interval, wilson_interval
from evaluators.conversation_metrics import SESSION_RE_ASKED

WORST = 10


@dataclass(frozen=True)
class Share:
    """`count` of `n` with the 95% Wilson interval of the share (None: n is 0)."""

    count: int
    n: int
    lower: float
    upper: float

    @property
    def value(self) -> float | None:
        return self.count / self.n if self.n else None


@dataclass(frozen=True)
class Mean:
    """The mean of `n` values with its 95% t interval (None: no value)."""

    value: float | None
    n: int
    lower: float | None
    upper: float | None


@dataclass(frozen=True)
class SessionOverview:
    since: datetime
    until: datetime
    sessions: int
    resolved: Share
    re_asked: Share
    escalated: Share
    abandoned: Share
    turns_re_asked: Share
    turns_to_resolution: Mean
    worst: tuple[SessionView, ...]
    """The worst sessions, worst first (`SessionView.badness`), unresolved ones only."""


def _share(count: int, n: int) -> Share:
    lower, upper = wilson_interval(count, n) if n else (0.0, 1.0)
    return Share(count, n, lower, upper)


def summarize(
    views: Iterable[SessionView], since: datetime, until: datetime, worst: int = WORST
) -> SessionOverview:
    """The overview of `views` (read once)."""
    counts = {"n": 0, "resolved": 0, "re_asked": 0, "escalated": 0, "abandoned": 0}
    turns = [0, 0]  # counted turns, followed by a re-ask
    to_resolution = [0, 0.0, 0.0]  # n, sum, sum of squares

    def counted(items: Iterable[SessionView]) -> Iterable[SessionView]:
        for view in items:
            counts["n"] += 1
            counts["resolved"] += view.resolved
            counts["re_asked"] += view.outcome.get(SESSION_RE_ASKED) == 1.0
            counts["escalated"] += view.escalated
            counts["abandoned"] += view.abandoned
            turns[0] += view.counted_turns
            turns[1] += view.re_asks
            steps = view.turns_to_resolution
            if view.resolved and steps is not None:
                to_resolution[0] += 1
                to_resolution[1] += steps
                to_resolution[2] += steps * steps
            if not view.resolved:
                yield view

    kept = heapq.nsmallest(worst, counted(views), key=lambda v: v.badness())
    n_resolved = int(to_resolution[0])
    if n_resolved:
        lower, upper = t_interval(n_resolved, to_resolution[1], to_resolution[2])
        mean = Mean(to_resolution[1] / n_resolved, n_resolved, lower, upper)
    else:
        mean = Mean(None, 0, None, None)
    n = counts["n"]
    return SessionOverview(
        since=since,
        until=until,
        sessions=n,
        resolved=_share(counts["resolved"], n),
        re_asked=_share(counts["re_asked"], n),
        escalated=_share(counts["escalated"], n),
        abandoned=_share(counts["abandoned"], n),
        turns_re_asked=_share(turns[1], turns[0]),
        turns_to_resolution=mean,
        worst=tuple(kept),
    )


def session_overview(
    session: Session, since: datetime, until: datetime, worst: int = WORST
) -> SessionOverview:
    """The overview of the sessions closed that started in [since, until)."""
    return summarize(closed_sessions(session, since, until), since, until, worst)
