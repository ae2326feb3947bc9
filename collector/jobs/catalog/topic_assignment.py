"""The topics job's two table writers: traces given their nearest topic, and found topics
described (keywords, examples, sizes) for the `topics` table.

`assign_topics` reads the traces a page of `PAGE` at a time, looks their questions' stored
vectors up and gives each its nearest active topic's centroid (a matrix product,
`evaluators.topics.nearest_topic`), none when the cosine is below the floor. With `every`
it goes over every trace (after a re-clustering, or a new topic) but writes only the rows
whose topic changed; otherwise only the traces without a topic yet. A row is stamped with
the run's `now` plus the time since the run `started`: the jobs move the outcomes of traces
assigned since their last run (`collector.jobs.recording.regroup`), so a stamp must not be
much older than its commit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from collector.store.models import Trace, TraceTopic
from collector.store.topics import (
    Assigned,
    StoredTopic,
    assigned_topics,
    load_topics,
    write_assignments,
)
from evaluators.topics import nearest_topic, topic_keywords
from evaluators.topics.evolve import Topics

PAGE = 2000
"""Traces read, looked up and assigned at a time."""

Vectors = Callable[[str, Sequence[str]], dict[str, np.ndarray]]
"""(model, texts) -> the stored vector of each text that has one."""


def assign_topics(
    session: Session,
    *,
    model: str,
    vectors: Vectors,
    min_similarity: float,
    since: datetime,
    now: datetime,
    every: bool,
    started: float,
) -> int:
    """Give the traces of [since, now] their nearest topic of embedding `model` (module
    docstring); returns how many got a new or changed row. Commits each page."""
    topics = [t for t in load_topics(session) if t.model == model]
    if not topics:
        return 0
    ids = np.asarray([t.id for t in topics], dtype=np.int64)
    centroids = np.vstack([t.centroid for t in topics])
    written = 0
    after = -1
    while True:
        query = (
            select(Trace.id, Trace.trace_id, Trace.question)
            .where(Trace.timestamp >= since, Trace.timestamp <= now)
            .where(Trace.not_request.is_(None), Trace.id > after)
            .order_by(Trace.id)
            .limit(PAGE)
        )
        if not every:
            query = query.outerjoin(TraceTopic, TraceTopic.trace_id == Trace.trace_id).where(
                TraceTopic.trace_id.is_(None)
            )
        page = session.execute(query).all()
        if not page:
            break
        after = int(page[-1][0])
        stored = vectors(model, [q for _, _, q in page if q])
        rows = [(t, q) for _, t, q in page if q and q in stored]
        if rows:
            matrix = np.vstack([stored[q] for _, q in rows])
            found = nearest_topic(matrix, centroids, min_similarity)
            fresh = [
                Assigned(
                    trace_id,
                    int(ids[topic]) if topic >= 0 else None,
                    float(found.similarity[i]),
                )
                for i, ((trace_id, _), topic) in enumerate(
                    zip(rows, found.topics.tolist(), strict=True)
                )
            ]
            if every:
                before = assigned_topics(session, [a.trace_id for a in fresh])
                fresh = [
                    a for a in fresh if a.trace_id not in before or before[a.trace_id] != a.topic_id
                ]
            stamp = now + timedelta(seconds=time.perf_counter() - started)
            written += write_assignments(session, fresh, stamp)
            session.commit()
        if len(page) < PAGE:
            break
    return written


def describe_topics(
    found: Topics,
    embeddings: np.ndarray,
    texts: Sequence[str],
    before: Mapping[int, StoredTopic],
    now: datetime,
    *,
    examples: int,
    model: str,
    method: str,
    params: Mapping[str, object],
) -> list[StoredTopic]:
    """The found topics with their keywords per language (c-TF-IDF), up to `examples`
    distinct example questions (the rows nearest their centroid) and sizes; a topic kept
    from `before` keeps its first sighting and name."""
    position = {topic_id: j for j, topic_id in enumerate(found.ids)}
    index = np.asarray([position.get(int(t), -1) for t in found.labels], dtype=np.int64)
    labels = topic_keywords(texts, index) if len(found.ids) else []
    sizes = np.bincount(index[index >= 0], minlength=len(found.ids))
    similarity = nearest_topic(embeddings, found.centroids).similarity
    out = []
    for j, topic_id in enumerate(found.ids):
        members = np.flatnonzero(index == j)
        order = members[np.argsort(-similarity[members], kind="stable")]
        chosen: list[str] = []
        for i in order.tolist():
            if texts[i] not in chosen:
                chosen.append(texts[i])
            if len(chosen) >= examples:
                break
        previous = before.get(topic_id)
        out.append(
            StoredTopic(
                id=topic_id,
                keywords=labels[j].keywords if j < len(labels) else {},
                examples=tuple(chosen),
                centroid=np.asarray(found.centroids[j], dtype=np.float32),
                size=int(sizes[j]),
                first_seen=previous.first_seen if previous is not None else now,
                last_seen=now,
                model=model,
                method=method,
                params=params,
                name=previous.name if previous is not None else None,
            )
        )
    return out
