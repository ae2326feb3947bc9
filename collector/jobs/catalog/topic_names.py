"""The `topics` job's last step with a judge configured: short names for unnamed topics.

A topic gets a name once: a topic kept across re-clusterings keeps its row's name, so only
new topics (and those left unnamed by an earlier budget or failure) are asked about, the
largest first, at most `topics.names_per_run` a run, one request each to the judge's first
model (`evaluators.topics.naming`). The judge client caches by model, prompt version and
input (keywords and examples) and counts every call against its own budget, so a retried
topic with the same keywords costs nothing more. The requests run concurrently under the
client's limits, outside any database transaction; the names are written after.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType

from sqlalchemy.orm import Session, sessionmaker

from collector.store.topics import StoredTopic, TopicName, load_topics, save_names
from evaluators.judge.errors import JudgeError
from evaluators.judge.protocol import Judge
from evaluators.topics.naming import Named, name_topic

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Naming:
    """What a naming step did: topics named, and those the judge failed on (left for a
    later run)."""

    named: int = 0
    failed: int = 0


def unnamed(topics: Sequence[StoredTopic], limit: int) -> list[StoredTopic]:
    """The topics to name this run: without a name, the largest first, at most `limit`."""
    todo = [t for t in topics if t.name is None and (t.keywords or t.examples)]
    todo.sort(key=lambda t: (-t.size, t.id))
    return todo[: max(limit, 0)]


async def _ask_all(judge: Judge, topics: Sequence[StoredTopic], model: str) -> list[object]:
    return await asyncio.gather(
        *(name_topic(judge, t.keywords, t.examples, model=model) for t in topics),
        return_exceptions=True,
    )


def name_topics(
    session_factory: sessionmaker[Session], judge: Judge, *, model: str, limit: int
) -> Naming:
    """Name up to `limit` unnamed active topics of embedding `model` (module docstring)."""
    if limit <= 0 or not judge.models:
        return Naming()
    with session_factory() as session:
        todo = unnamed([t for t in load_topics(session) if t.model == model], limit)
    if not todo:
        return Naming()
    judge_model = judge.models[0]
    answers = asyncio.run(_ask_all(judge, todo, judge_model))
    names: dict[int, TopicName] = {}
    failed = 0
    for topic, answer in zip(todo, answers, strict=True):
        if isinstance(answer, JudgeError):
            failed += 1
            logger.warning("topics: naming topic %d failed: %s", topic.id, answer)
            continue
        if isinstance(answer, BaseException):
            raise answer
        if not isinstance(answer, Named):  # no usable name in the answer
            failed += 1
            continue
        names[topic.id] = TopicName(
            MappingProxyType(dict(answer.names)), answer.model, answer.prompt
        )
    if names:
        with session_factory() as session:
            save_names(session, names)
            session.commit()
    return Naming(len(names), failed)
