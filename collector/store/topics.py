"""The `topics` and `trace_topics` tables: the topics found in the users' questions and each
trace's topic (issue 41), read and written in bulk.

A topic's centroid is stored as float32 little-endian bytes, like `embeddings.vector`.
Assignments are written per batch of traces: the batch's old rows are deleted and the new
ones inserted in the caller's transaction (the same on SQLite and PostgreSQL, and a trace
re-assigned after a re-clustering simply gets its new row).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any

import numpy as np
from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.orm import Session

from collector.store.models import Topic, Trace, TraceTopic

CHUNK = 1000
"""Trace ids per DELETE and rows per INSERT (well under SQLite's bound-parameter limit)."""
LABEL_KEYWORDS = 3
"""Keywords per language in a topic's short label."""


def _keywords(raw: Mapping[str, Any]) -> MappingProxyType[str, tuple[str, ...]]:
    return MappingProxyType(
        {str(lang): tuple(str(w) for w in words) for lang, words in raw.items()}
    )


@dataclass(frozen=True)
class TopicName:
    """The judge's short name of a topic: one per language of its questions, the judge
    model that wrote it and the prompt version."""

    names: Mapping[str, str]
    model: str
    prompt: str

    @property
    def text(self) -> str:
        """The names, "en" first, joined by " / " (one language: its name)."""
        order = sorted(self.names, key=lambda lang: (lang != "en", lang))
        return " / ".join(self.names[lang] for lang in order if self.names[lang])

    def as_json(self) -> dict[str, Any]:
        return {"names": dict(self.names), "model": self.model, "prompt": self.prompt}


def _name(raw: Mapping[str, Any] | None) -> TopicName | None:
    if not raw or not isinstance(raw.get("names"), Mapping):
        return None
    names = {str(k): str(v) for k, v in raw["names"].items() if v}
    if not names:
        return None
    return TopicName(MappingProxyType(names), str(raw.get("model", "")), str(raw.get("prompt", "")))


@dataclass(frozen=True)
class StoredTopic:
    """A topic as stored: see `collector.store.models.Topic` for the fields."""

    id: int
    keywords: Mapping[str, tuple[str, ...]]
    examples: tuple[str, ...]
    centroid: np.ndarray
    size: int
    first_seen: datetime
    last_seen: datetime
    model: str
    method: str
    params: Mapping[str, Any] = field(default_factory=dict)
    active: bool = True
    name: TopicName | None = None

    @property
    def title(self) -> str:
        """What to call the topic: the judge's name when it has one, else `label`."""
        return self.name.text if self.name is not None and self.name.text else self.label

    @property
    def label(self) -> str:
        """A short label: the top keywords of each language, "en" first, joined by " / "
        (`topic <id>` when the topic has no keywords)."""
        parts = [
            ", ".join(self.keywords[lang][:LABEL_KEYWORDS])
            for lang in sorted(self.keywords, key=lambda lang: (lang != "en", lang))
            if self.keywords[lang]
        ]
        return " / ".join(parts) or f"topic {self.id}"


@dataclass(frozen=True)
class Assigned:
    """One trace's topic (None: no topic was near enough) and its cosine to that centroid."""

    trace_id: str
    topic_id: int | None
    similarity: float


def centroid_bytes(centroid: np.ndarray) -> bytes:
    """A centroid as the table stores it: float32 little-endian bytes."""
    return np.ascontiguousarray(centroid, dtype="<f4").tobytes()


def _from_row(row: Topic) -> StoredTopic:
    return StoredTopic(
        id=row.id,
        keywords=_keywords(row.keywords or {}),
        examples=tuple(str(e) for e in row.examples or ()),
        centroid=np.frombuffer(row.centroid, dtype="<f4"),
        size=row.size,
        first_seen=row.first_seen,
        last_seen=row.last_seen,
        model=row.model,
        method=row.method,
        params=MappingProxyType(dict(row.params or {})),
        active=row.active,
        name=_name(row.name),
    )


def load_topics(session: Session, *, active_only: bool = True) -> list[StoredTopic]:
    """The stored topics (only the active ones unless `active_only` is false), by id."""
    query = select(Topic).order_by(Topic.id)
    if active_only:
        query = query.where(Topic.active.is_(True))
    return [_from_row(row) for row in session.scalars(query)]


def get_topic(session: Session, topic_id: int) -> StoredTopic | None:
    """The topic with that id, active or retired; None when there is none."""
    row = session.get(Topic, topic_id)
    return _from_row(row) if row is not None else None


def topic_names(session: Session) -> dict[tuple[str, str], str]:
    """("topic", id) -> "id (title)" of every stored topic (its judge-written name, else its
    keywords): how `explain` and the report show a topic slice, whose value is the bare id."""
    stored = load_topics(session, active_only=False)
    return {("topic", str(t.id)): f"{t.id} ({t.title})" for t in stored}


def next_topic_id(session: Session) -> int:
    """The first id no topic has ever had (ids are never reused)."""
    top = session.scalar(select(func.max(Topic.id)))
    return int(top) + 1 if top is not None else 0


def last_clustered(
    session: Session, model: str | None = None, besides: str | None = None
) -> datetime | None:
    """When the active topics (of embedding `model`, when given) were last found: their
    latest `last_seen`, not counting topics found by the method `besides` (born between
    re-clusterings); None when there are none."""
    query = select(func.max(Topic.last_seen)).where(Topic.active.is_(True))
    if model is not None:
        query = query.where(Topic.model == model)
    if besides is not None:
        query = query.where(Topic.method != besides)
    when: datetime | None = session.scalar(query)
    return when


def save_topics(session: Session, topics: Sequence[StoredTopic], retired: Sequence[int]) -> None:
    """Insert or update `topics` (active) and mark the `retired` ids inactive; the caller
    commits."""
    for topic in topics:
        session.merge(
            Topic(
                id=topic.id,
                active=True,
                keywords={lang: list(words) for lang, words in topic.keywords.items()},
                examples=list(topic.examples),
                centroid=centroid_bytes(topic.centroid),
                size=topic.size,
                first_seen=topic.first_seen,
                last_seen=topic.last_seen,
                model=topic.model,
                method=topic.method,
                params=dict(topic.params),
                name=topic.name.as_json() if topic.name is not None else None,
            )
        )
    if retired:
        session.execute(update(Topic).where(Topic.id.in_(list(retired))).values(active=False))


def save_names(session: Session, names: Mapping[int, TopicName]) -> None:
    """Store the judge's names of these topics; the caller commits."""
    for topic_id, name in names.items():
        session.execute(update(Topic).where(Topic.id == topic_id).values(name=name.as_json()))


def write_assignments(session: Session, rows: Sequence[Assigned], now: datetime) -> int:
    """Replace the assignment rows of these traces; returns how many were written. The
    caller commits."""
    for start in range(0, len(rows), CHUNK):
        part = rows[start : start + CHUNK]
        session.execute(
            delete(TraceTopic).where(TraceTopic.trace_id.in_([r.trace_id for r in part]))
        )
        session.execute(
            insert(TraceTopic),
            [
                {
                    "trace_id": r.trace_id,
                    "topic_id": r.topic_id,
                    "similarity": float(r.similarity),
                    "assigned_at": now,
                }
                for r in part
            ],
        )
    return len(rows)


def assigned_topics(session: Session, trace_ids: Sequence[str]) -> dict[str, int | None]:
    """trace_id -> topic id (None: an outlier) of those of `trace_ids` with an assignment."""
    out: dict[str, int | None] = {}
    for start in range(0, len(trace_ids), CHUNK):
        query = select(TraceTopic.trace_id, TraceTopic.topic_id).where(
            TraceTopic.trace_id.in_(list(trace_ids[start : start + CHUNK]))
        )
        out.update(
            {str(t): None if topic is None else int(topic) for t, topic in session.execute(query)}
        )
    return out


def topics_of(session: Session, trace_ids: Sequence[str]) -> dict[str, int]:
    """trace_id -> topic id of those of `trace_ids` that have a topic."""
    return {
        t: topic for t, topic in assigned_topics(session, trace_ids).items() if topic is not None
    }


def prune_assignments(session: Session, before: datetime) -> int:
    """Delete assignments made before `before` (traces the job no longer looks at);
    returns how many. The caller commits."""
    result = session.execute(delete(TraceTopic).where(TraceTopic.assigned_at < before))
    return int(getattr(result, "rowcount", 0) or 0)


def topic_volumes(session: Session, since: datetime | None = None) -> dict[int | None, int]:
    """Traces per topic id (None: traces without a topic), among the traces with a
    timestamp at or after `since` (all assigned traces when None)."""
    query = select(TraceTopic.topic_id, func.count()).group_by(TraceTopic.topic_id)
    if since is not None:
        query = query.join(Trace, Trace.trace_id == TraceTopic.trace_id).where(
            Trace.timestamp >= since
        )
    return {
        (int(topic) if topic is not None else None): int(count)
        for topic, count in session.execute(query)
    }


def iter_assignments(
    session: Session, since: datetime | None = None, batch: int = CHUNK
) -> Iterator[tuple[str, int | None]]:
    """(trace_id, topic_id) of every assigned trace with a timestamp at or after `since`,
    by trace id, streamed in pages of `batch` rows (memory bounded by the page)."""
    after = ""
    while True:
        query = (
            select(TraceTopic.trace_id, TraceTopic.topic_id)
            .where(TraceTopic.trace_id > after)
            .order_by(TraceTopic.trace_id)
            .limit(batch)
        )
        if since is not None:
            query = query.join(Trace, Trace.trace_id == TraceTopic.trace_id).where(
                Trace.timestamp >= since
            )
        page = [
            (str(t), int(topic) if topic is not None else None)
            for t, topic in session.execute(query)
        ]
        yield from page
        if len(page) < batch:
            return
        after = page[-1][0]
