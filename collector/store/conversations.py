"""Conversations in the traces: which sessions changed or fell idle, and their turns.

A session is the traces sharing a `session_id`, in time order (`timestamp`, then
`trace_id` for equal times, so every reader orders them alike). The sessions job
(`collector/jobs/catalog/sessions.py`) asks which sessions may need their outcome computed
(`touched`: a turn new or changed since its watermark, or the last turn gone idle since its
last run), then reads their turns a page of sessions at a time (`turns_of`), at most
`limit` per session (a window function: a huge session costs no more memory than that).
The `ragpulse sessions` command reads the turns of one session the same way.
Reads use the partial index on (session_id, timestamp) (rev. 0017).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Row, func, select
from sqlalchemy.orm import Session

from collector.store.models import Trace

TURN_COLUMNS = (
    Trace.trace_id,
    Trace.session_id,
    Trace.timestamp,
    Trace.updated_at,
    Trace.received_at,
    Trace.question,
    Trace.answer,
    Trace.tags,
    Trace.model,
    Trace.contexts,
    Trace.feedback_rating,
)
"""What a turn is read with: what the outcome detection and `record_each` use."""

PAGE = 500
"""Sessions whose turns are read by one query."""


def touched(
    session: Session,
    since: datetime,
    updated_after: datetime | None,
    idle_from: datetime | None,
    idle_until: datetime,
) -> tuple[list[str], datetime | None]:
    """The session ids (sorted) with a turn of `since` or later that either was stored or
    changed after `updated_after` (None: every one), or has a timestamp in (`idle_from`,
    `idle_until`] (None: from `since`): a session whose last turn is there went idle
    between two runs. Also the newest `updated_at` of the turns seen (None: no turn)."""
    base = Trace.session_id.is_not(None), Trace.timestamp >= since
    changed = select(Trace.session_id, func.max(Trace.updated_at)).where(*base)
    if updated_after is not None:
        changed = changed.where(Trace.updated_at > updated_after)
    ids: set[str] = set()
    newest: datetime | None = None
    for sid, updated in session.execute(changed.group_by(Trace.session_id)):
        ids.add(sid)
        if newest is None or updated > newest:
            newest = updated
    idle = select(Trace.session_id).where(*base, Trace.timestamp <= idle_until).distinct()
    if idle_from is not None:
        idle = idle.where(Trace.timestamp > idle_from)
    ids.update(sid for sid in session.execute(idle).scalars() if sid is not None)
    return sorted(ids), newest


def pages(ids: Sequence[str], size: int = PAGE) -> Iterator[Sequence[str]]:
    """`ids` a page at a time."""
    for start in range(0, len(ids), size):
        yield ids[start : start + size]


def turns_of(
    session: Session, session_ids: Collection[str], since: datetime, limit: int
) -> dict[str, list[Row[Any]]]:
    """The first `limit` turns (of `since` or later) of each session, in time order
    (`TURN_COLUMNS`), by session id; sessions without turns are left out."""
    if not session_ids:
        return {}
    rank = (
        func.row_number()
        .over(partition_by=Trace.session_id, order_by=(Trace.timestamp, Trace.trace_id))
        .label("rank")
    )
    inner = (
        select(*TURN_COLUMNS, rank)
        .where(Trace.session_id.in_(sorted(session_ids)), Trace.timestamp >= since)
        .subquery()
    )
    query = (
        select(*(inner.c[c.key] for c in TURN_COLUMNS))
        .where(inner.c.rank <= limit)
        .order_by(inner.c.session_id, inner.c.rank)
    )
    out: dict[str, list[Row[Any]]] = {}
    for row in session.execute(query):
        out.setdefault(row.session_id, []).append(row)
    return out


def session_of(session: Session, trace_id: str) -> str | None:
    """The session id of a trace (None: no such trace, or it has no session)."""
    return session.execute(
        select(Trace.session_id).where(Trace.trace_id == trace_id)
    ).scalar_one_or_none()
