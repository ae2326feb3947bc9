"""The topics as an operator reads them: volume, share, emerging and their signals.

One value per active topic for `ragpulse topics`, the report and the exporter: its
traces in a window and their share of the window's traffic (traces with an embedding,
those with no topic near included), whether it is emerging (`topic_traffic.emergence`,
at `now` whatever the window), its change of share (recent minus baseline share of the
emerging test), and, when asked (a pass over the window's traces, `topic_gaps`), the
knowledge-gap signals with their intervals. Sorted by volume, largest first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from collector.jobs.queries.topic_gaps import topic_gaps
from collector.jobs.queries.topic_traffic import emergence, topic_counts
from collector.settings import TopicSettings
from collector.store.topics import StoredTopic, load_topics
from evaluators.topics.emerging import Emergence
from evaluators.topics.gaps import Gap


@dataclass(frozen=True)
class TopicRow:
    """One active topic's numbers."""

    topic: StoredTopic
    volume: int
    share: float | None
    emergence: Emergence | None
    gap: Gap | None
    """The topic's gap signals (None when not asked, or it measured nothing)."""

    @property
    def emerging(self) -> bool:
        return self.emergence is not None and self.emergence.emerging


@dataclass(frozen=True)
class Overview:
    """The active topics over [since, until)."""

    since: datetime
    until: datetime
    traces: int
    without_topic: int
    rows: tuple[TopicRow, ...]
    gaps: tuple[Gap, ...]
    """Every topic's gap entry, ranked (empty when not asked)."""


def overview(
    session: Session,
    settings: TopicSettings,
    since: datetime,
    until: datetime,
    *,
    signals: bool = False,
    topics: Sequence[StoredTopic] | None = None,
) -> Overview:
    """The active topics' numbers (module docstring); `signals` adds the gap signals."""
    active = list(topics) if topics is not None else load_topics(session)
    counts = topic_counts(session, since, until)
    total = sum(counts.values())
    emerging = emergence(session, active, until, settings)
    gaps = topic_gaps(session, since, until, examples=settings.examples) if signals else []
    by_topic = {g.topic: g for g in gaps}
    rows = [
        TopicRow(
            topic=t,
            volume=counts.get(t.id, 0),
            share=counts.get(t.id, 0) / total if total else None,
            emergence=emerging.get(t.id),
            gap=by_topic.get(t.id),
        )
        for t in active
    ]
    rows.sort(key=lambda r: (-r.volume, r.topic.id))
    active_ids = {t.id for t in active}
    return Overview(
        since=since,
        until=until,
        traces=total,
        without_topic=counts.get(None, 0),
        rows=tuple(rows),
        gaps=tuple(g for g in gaps if g.topic in active_ids),
    )
