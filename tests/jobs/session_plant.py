"""Planted conversations for the tests of what the sessions job's outcomes feed (the
conversations SLO, the report's conversations section): resolved sessions, and failed ones
that re-ask the same question in other words or ask for a person, with an embedder that
makes phrasings of one intent paraphrases (and nothing else)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from collector.jobs.catalog import sessions as sessions_job
from collector.jobs.catalog.sessions import SessionsJob
from collector.jobs.run.definition import JobEnvironment
from collector.jobs.windows.window import parse_windows
from collector.settings import Settings
from collector.store.session import make_session_factory
from tests.jobs.helpers import add_trace

INTENTS = {
    "password": ("How do I reset my password?", "I forgot my password, how can I change it?"),
    "delivery": ("Сколько идёт доставка в Москву?", "Сколько дней везут заказ до Москвы?"),
}
"""intent -> its phrasings: a later phrasing of the same intent is a re-ask."""


class IntentEmbedder:
    """Phrasings of one intent share a unit vector; any other text gets its own (random
    directions in 256 dimensions are nearly orthogonal: no re-ask between them)."""

    model_name = "test-intents"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            key = next((k for k, v in INTENTS.items() if text in v), text)
            seed = int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "little")
            v = np.random.default_rng(seed).normal(size=256)
            rows.append(v / np.linalg.norm(v))
        return np.asarray(rows, dtype=np.float32)


def sessions_job_of(
    engine: Engine, observers: Sequence[object] = (), embedder: Any = None
) -> SessionsJob:
    """The sessions job with the default settings, `embedder` (default: the intent
    embedder) and `observers`."""
    definition = sessions_job.definition(Settings())
    env = JobEnvironment(
        session_factory=make_session_factory(engine),
        windows=parse_windows(["1h", "24h"]),
        group_labels=["tenant"],
        embedder=embedder or IntentEmbedder(),
        observers=observers,  # type: ignore[arg-type]
    )
    assert definition.factory is not None
    job = definition.factory(definition, env)
    assert isinstance(job, SessionsJob)
    return job


def plant_session(
    factory: sessionmaker[Session],
    sid: str,
    questions: Sequence[str],
    start: datetime,
    tenant: str = "acme",
) -> None:
    """One session: a turn a minute from `start`."""
    with factory() as session:
        for i, question in enumerate(questions):
            add_trace(
                session,
                f"{sid}-{i}",
                start + timedelta(minutes=i),
                question=question,
                answer="an answer",
                session_id=sid,
                turn=i,
                tags={"tenant": tenant},
            )
        session.commit()


def resolved(factory: sessionmaker[Session], prefix: str, count: int, start: datetime) -> None:
    """`count` two-turn sessions: a question, then thanks."""
    for i in range(count):
        question = f"What are the opening hours of branch {prefix}{i}?"
        plant_session(factory, f"{prefix}{i}", (question, "Thanks, that helped"), start)


def failed(factory: sessionmaker[Session], prefix: str, count: int, start: datetime) -> None:
    """`count` failed sessions: the odd ones re-ask (the same question in other words),
    the even ones ask for a person (in Russian and English in turn)."""
    for i in range(count):
        if i % 2:
            intent = INTENTS["password" if i % 4 == 1 else "delivery"]
            plant_session(factory, f"{prefix}{i}", intent, start)
        else:
            person = ("Соедините меня с оператором", "I want to talk to a human")[i % 4 // 2]
            plant_session(factory, f"{prefix}{i}", (f"Где мой заказ {prefix}{i}?", person), start)
