"""How much history the store holds, and whether a window or baseline asked for has enough.

A fresh install holds minutes of traces while the commands that compare windows default
to hours and days (a 7d baseline, a 24h comparison, a 7d volume). They ask this module
what exists and say it ("4 min of history; the 7d baseline needs ≥ 1h") instead of
extrapolating from it.

**The rule.** A span of length L needs at least `min(L, minimum)` of history inside it,
`minimum` being the shortest evaluation window (`scheduler.windows`, 1h by default): the
shortest span the jobs aggregate and page on, so the shortest span a number is ever read
from. A 7d baseline or a 7d volume needs one hour of it; a 10m span needs its 10 minutes.
Between that and L the span is used with what exists, and the output says how much that is.

History runs from the first timestamp of the per-trace outcomes of the jobs asked for
(`job_outcomes.ts`, the trace's time: what explain, compare and the windows read), or of
the stored traces when no job is named, to the end of the span asked (now, live): a store
that has watched a quiet day has a day of history, of little traffic. First and last are
each one probe of the `(job, ts)` or `timestamp` index, also on a large PostgreSQL table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import InstrumentedAttribute, Session

from collector.settings import parse_duration
from collector.store.models import JobOutcome, Trace

ZERO = timedelta(0)


@dataclass(frozen=True, slots=True)
class History:
    """The first and last stored time of a scope (None: nothing stored)."""

    first: datetime | None
    last: datetime | None

    def inside(self, start: datetime, end: datetime) -> timedelta:
        """How much of `[start, end)` the history covers: from its first time (or `start`)
        to `end`. The last time is not a bound: the jobs score traces a run behind, so a
        live window is covered up to now."""
        if self.first is None or self.first >= end:
            return ZERO
        return end - max(start, self.first)

    def since(self, end: datetime) -> timedelta:
        """The whole history before `end`."""
        return ZERO if self.first is None or self.first >= end else end - self.first


def stored_history(
    session: Session, *, jobs: Sequence[str] | None = None, until: datetime | None = None
) -> History:
    """The first and last `job_outcomes.ts` of `jobs` (each job's own index range, then
    the extremes), or of `traces.timestamp` when `jobs` is None; only times before
    `until` when given."""
    if jobs is None:
        return _extremes(session, Trace.timestamp, [], until)
    found = [_extremes(session, JobOutcome.ts, [JobOutcome.job == job], until) for job in jobs]
    firsts = [h.first for h in found if h.first is not None]
    lasts = [h.last for h in found if h.last is not None]
    return History(min(firsts, default=None), max(lasts, default=None))


def _extremes(
    session: Session,
    column: InstrumentedAttribute[datetime],
    where: Sequence[ColumnElement[bool]],
    until: datetime | None,
) -> History:
    clauses = [*where, *([column < until] if until is not None else [])]
    first = session.scalar(select(func.min(column)).where(*clauses))
    last = session.scalar(select(func.max(column)).where(*clauses))
    return History(first, last)


def newest_share_start(
    session: Session, *, jobs: Sequence[str], until: datetime, share: float
) -> datetime | None:
    """The time from which the newest `share` of the per-trace outcomes of `jobs` before
    `until` are (None: none stored): where a young store's newest part begins, by count,
    not by time (its traffic need not be even). One count and one offset probe of the
    `(job, ts)` index: meant for a young store, whose outcomes are few."""
    where = [JobOutcome.job.in_(list(jobs)), JobOutcome.ts < until]
    count = session.scalar(select(func.count()).select_from(JobOutcome).where(*where)) or 0
    if count == 0:
        return None
    newest = max(1, int(count * share))
    return session.scalar(
        select(JobOutcome.ts).where(*where).order_by(JobOutcome.ts.desc()).offset(newest - 1)
    )


def shortest_window(windows: Sequence[str]) -> timedelta:
    """The rule's `minimum`: the shortest of the evaluation windows (`scheduler.windows`)."""
    return timedelta(seconds=min(parse_duration(w) for w in windows))


def needed(span: timedelta, minimum: timedelta) -> timedelta:
    """The history a span needs (the module's rule): all of it, at most `minimum`."""
    return min(span, minimum)


def short_of(history: History, start: datetime, end: datetime, minimum: timedelta) -> bool:
    """True when `[start, end)` holds less history than the rule asks for."""
    return history.inside(start, end) < needed(end - start, minimum)


def span_text(span: timedelta) -> str:
    """A length as a person reads it: "40 s", "4 min", "2.5h", "3.2d"."""
    seconds = span.total_seconds()
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds // 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.3g}h"
    return f"{seconds / 86400:.3g}d"


def have_text(history: History, end: datetime) -> str:
    """ "4 min of history" (up to `end`), or "no history"."""
    age = history.since(end)
    return f"{span_text(age)} of history" if age > ZERO else "no history"


def shortfall(
    history: History, end: datetime, what: str, span: timedelta, minimum: timedelta
) -> str:
    """The one line that says a span asked for lacks history: "4 min of history; the 7d
    baseline needs ≥ 1h" (`what`: "the 7d baseline")."""
    return f"{have_text(history, end)}; {what} needs ≥ {span_text(needed(span, minimum))}"
