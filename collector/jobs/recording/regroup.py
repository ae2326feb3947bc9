"""Outcomes stored before their trace had its topic, moved to the topic's group once it has.

A job records a trace's `topic` group and slice from `trace_topics` when it scores the trace
(`TraceCursor.record_each`). The `topics` job gives a trace its topic only once its
question's embedding is stored, and every trace of the look-back its topic again after a
re-clustering, so an outcome may have been stored without a topic, or with one that changed.
Each run of a job looks at the assignments made since its previous look (minus `GRACE`;
all of the longest window on its first run) and, for its outcomes whose stored topic
differs, rewrites the row's `groups` and `slices` and moves the row's contribution in the
bucket sums from the old groups to the new ones, in the caller's transaction: the windows,
drift detectors and `explain` then count the trace under its topic, once.

A run holds its job's lock (the scheduler's, or the sharded aggregation's); on PostgreSQL
the rows are also locked as they are read (FOR UPDATE), and the scoring path locks the rows
it replaces (`TraceCursor._read_stored`), so a trace scored again meanwhile by another
shard's worker is moved by one of the two, after the other's commit.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Text, bindparam, cast, select, update
from sqlalchemy.orm import Session

from collector.jobs.buckets.bulk_write import apply_changes
from collector.jobs.buckets.contributions import Contributions
from collector.jobs.outcomes.codec import read_groups, read_outcomes
from collector.jobs.outcomes.store import OUTCOMES
from collector.jobs.recording.cursor import epoch
from collector.jobs.windows.window import TOPIC_LABEL
from collector.store.models import JobOutcome, TraceTopic

PAGE = 10_000
"""Outcome rows read, compared and moved at a time."""
GRACE = timedelta(minutes=5)
"""Assignments stamped this long before the previous look are looked at again (a topics
run's pages commit a little after the time they carry)."""


def _with_topic(values: Mapping[str, Any] | None, topic: int | None) -> dict[str, Any] | None:
    """`values` with its `topic` entry set to `topic` (removed when None); None if empty."""
    out = dict(values or {})
    out.pop(TOPIC_LABEL, None)
    if topic is not None:
        out[TOPIC_LABEL] = str(topic)
    return out or None


def regroup(
    session: Session,
    *,
    job: str,
    metrics: frozenset[str] | None,
    since: datetime,
    assigned_after: datetime | None,
    grouped: bool,
    sliced: bool,
) -> int:
    """Move `job`'s outcomes of traces assigned a topic after `assigned_after` (None: any
    time), stored at or after `since`, whose stored topic differs (module docstring);
    `grouped` / `sliced`: whether `topic` is a group label / a slice dimension. Returns the
    rows moved; the caller commits."""
    if not grouped and not sliced:
        return 0
    o, t = JobOutcome, TraceTopic
    locking = session.get_bind().dialect.name == "postgresql"
    moved = 0
    after = ""
    while True:
        query = (
            select(
                o.id,
                o.trace_id,
                o.ts,
                cast(o.groups, Text),
                cast(o.outcomes, Text),
                o.slices,
                t.topic_id,
            )
            .join(t, t.trace_id == o.trace_id)
            .where(o.job == job, o.ts >= since, o.trace_id > after)
            .order_by(o.trace_id)
            .limit(PAGE)
        )
        if assigned_after is not None:
            query = query.where(t.assigned_at > assigned_after - GRACE)
        if locking:
            query = query.with_for_update(of=o)
        page = session.execute(query).all()
        if not page:
            return moved
        after = str(page[-1][1])
        delta = Contributions(metrics)
        changes = []
        for row_id, _, ts, groups_text, outcomes_text, slices, topic in page:
            groups = read_groups(groups_text)
            stored = None if groups is None else groups.get(TOPIC_LABEL)
            if slices is not None and not grouped:
                stored = slices.get(TOPIC_LABEL)
            wanted = None if topic is None else str(topic)
            if stored == wanted:
                continue
            new_groups = _with_topic(groups, topic) if grouped else groups
            if grouped:
                outcomes = read_outcomes(outcomes_text)
                stamp = epoch(ts)
                delta.add(stamp, groups, outcomes, -1)
                delta.add(stamp, new_groups, outcomes, 1)
            changes.append(
                {
                    "b_id": row_id,
                    "b_ts": ts,
                    "b_groups": new_groups,
                    "b_slices": _with_topic(slices, topic) if sliced else slices,
                }
            )
        if changes:
            session.execute(
                update(OUTCOMES)
                .where(OUTCOMES.c.id == bindparam("b_id"), OUTCOMES.c.ts == bindparam("b_ts"))
                .values(groups=bindparam("b_groups"), slices=bindparam("b_slices")),
                changes,
            )
            apply_changes(session, job, delta.changes())
            moved += len(changes)
        if len(page) < PAGE:
            return moved
