"""Each topic's traffic in a window, and which topics are emerging (issue 41).

Counts are one aggregate query over `trace_topics` joined with `traces` (by the traces'
timestamps), grouped by topic: memory is the number of topics whatever the traffic, on
SQLite and PostgreSQL alike. Traces the `topics` job found no topic near (`topic_id`
NULL) count in a window's total (they are traffic) under the key None.

Emerging (`evaluators.topics.emerging`): the active topics' traces in the recent window
(`topics.emerging_window`, ending now) against the baseline before it
(`topics.emerging_baseline`). A topic is `new` when it was first found inside the recent
window by a re-clustering after the first one (the first clustering finds every topic at
once, and none of them is news).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from collector.settings import TopicSettings, parse_duration
from collector.store.models import Topic, Trace, TraceTopic
from collector.store.topics import StoredTopic
from evaluators.topics.emerging import Emergence, EmergingOptions, emerging_topics


def topic_counts(session: Session, since: datetime, until: datetime) -> dict[int | None, int]:
    """Traces per topic id (None: no topic near) with a timestamp in [since, until)."""
    query = (
        select(TraceTopic.topic_id, func.count())
        .join(Trace, Trace.trace_id == TraceTopic.trace_id)
        .where(Trace.timestamp >= since, Trace.timestamp < until)
        .group_by(TraceTopic.topic_id)
    )
    return {
        (int(topic) if topic is not None else None): int(count)
        for topic, count in session.execute(query)
    }


def _two_windows(
    session: Session, start: datetime, split: datetime, until: datetime
) -> dict[int | None, tuple[int, int]]:
    """Topic -> (traces in [split, until), traces in [start, split)), in one query."""
    recent = func.sum(case((Trace.timestamp >= split, 1), else_=0))
    before = func.sum(case((Trace.timestamp < split, 1), else_=0))
    query = (
        select(TraceTopic.topic_id, recent, before)
        .join(Trace, Trace.trace_id == TraceTopic.trace_id)
        .where(Trace.timestamp >= start, Trace.timestamp < until)
        .group_by(TraceTopic.topic_id)
    )
    return {
        (int(topic) if topic is not None else None): (int(r or 0), int(b or 0))
        for topic, r, b in session.execute(query)
    }


def options(settings: TopicSettings) -> EmergingOptions:
    """The rise test's options from the settings."""
    return EmergingOptions(
        alpha=settings.emerging_alpha,
        min_ratio=settings.emerging_min_ratio,
        min_change=settings.emerging_min_change,
        min_traces=settings.emerging_min_traces,
    )


def emergence(
    session: Session, topics: Sequence[StoredTopic], now: datetime, settings: TopicSettings
) -> dict[int, Emergence]:
    """Each of `topics` (the active ones) tested for a rise of its share (module
    docstring), by id."""
    window = timedelta(seconds=parse_duration(settings.emerging_window))
    baseline = timedelta(seconds=parse_duration(settings.emerging_baseline))
    split = now - window
    counts = _two_windows(session, split - baseline, split, now)
    first: datetime | None = session.scalar(select(func.min(Topic.first_seen)))
    ids = [t.id for t in topics]
    found = emerging_topics(
        ids,
        [counts.get(i, (0, 0))[0] for i in ids],
        [counts.get(i, (0, 0))[1] for i in ids],
        recent_total=sum(r for r, _ in counts.values()),
        baseline_total=sum(b for _, b in counts.values()),
        new=[first is not None and t.first_seen > first and t.first_seen >= split for t in topics],
        options=options(settings),
    )
    return {e.topic: e for e in found}
