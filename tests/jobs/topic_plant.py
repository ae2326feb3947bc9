"""Planted topics for the topic query, CLI, exporter and report tests: topic rows,
traces with their topic and the per-trace outcomes of the jobs the gap list reads,
written in bulk straight through SQLAlchemy (no embeddings, no clustering)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import insert
from sqlalchemy.orm import Session

from collector.store.models import JobOutcome, Topic, Trace, TraceTopic
from collector.store.topics import centroid_bytes


@dataclass(frozen=True)
class Planted:
    """One topic's traffic: traces per day over the days before now (the last day
    first), and the share of its traces failing each way."""

    topic: int
    words: Sequence[str]
    per_day: Sequence[int]
    empty: float = 0.0
    no_answer: float = 0.0
    miss: float = 0.0
    re_asked: float = 0.0
    """Share of the traces (every third one has a session turn outcome) re-asked."""
    first_seen_hours: float = 24 * 30
    examples: tuple[str, ...] = field(default_factory=tuple)


def plant(
    session: Session,
    now: datetime,
    topics: Sequence[Planted],
    seed: int = 1,
    *,
    outcomes: bool = True,
) -> int:
    """Store the topics and their traces (spread evenly over each day); returns how many
    traces. Every trace has an answer and (`outcomes`) a retrieval_health outcome, every
    other one a hit_rate@5 outcome."""
    rng = np.random.default_rng(seed)
    for t in topics:
        session.add(
            Topic(
                id=t.topic,
                active=True,
                keywords={"en": list(t.words)},
                examples=list(t.examples or (f"{t.words[0]} question",)),
                centroid=centroid_bytes(np.ones(4, dtype=np.float32) / 2),
                size=50,
                first_seen=now - timedelta(hours=t.first_seen_hours),
                last_seen=now - timedelta(hours=1),
                model="planted",
                method="planted",
                params={},
            )
        )
    traces: list[dict[str, Any]] = []
    assigned: list[dict[str, Any]] = []
    scored: list[dict[str, Any]] = []
    for t in topics:
        for day, count in enumerate(t.per_day):
            for i in range(count):
                ts = now - timedelta(days=day) - timedelta(seconds=(i + 0.5) * 86400 / count)
                trace_id = f"t{t.topic}-d{day}-{i}"
                empty = rng.random() < t.empty
                silent = rng.random() < t.no_answer
                answer = "I don't know, sorry." if silent else f"Here is how {t.words[0]} works."
                traces.append(
                    {"trace_id": trace_id, "timestamp": ts, "received_at": ts,
                     "updated_at": ts, "source": "json",
                     "question": f"{' '.join(t.words)} #{day}-{i}", "answer": answer}
                )  # fmt: skip
                assigned.append(
                    {"trace_id": trace_id, "topic_id": t.topic, "similarity": 0.9,
                     "assigned_at": now}
                )  # fmt: skip
                scored.append(
                    {"job": "retrieval_health", "trace_id": trace_id, "trace_updated_at": ts,
                     "ts": ts, "outcomes": {"retrieval_empty_rate": float(empty)}}
                )  # fmt: skip
                if t.re_asked and i % 3 == 0:
                    turn = {"turn_re_asked": float(rng.random() < t.re_asked)}
                    scored.append(
                        {"job": "sessions", "trace_id": trace_id, "trace_updated_at": ts,
                         "ts": ts, "outcomes": turn}
                    )  # fmt: skip
                if i % 2 == 0:
                    hit = {"hit_rate@5": float(rng.random() >= t.miss), "mrr": 0.5}
                    scored.append(
                        {"job": "real_users_benchmark", "trace_id": trace_id,
                         "trace_updated_at": ts, "ts": ts, "outcomes": hit}
                    )  # fmt: skip
    session.flush()
    for table, rows in (
        (Trace, traces),
        (TraceTopic, assigned),
        (JobOutcome, scored if outcomes else []),
    ):
        for start in range(0, len(rows), 2000):
            session.execute(insert(table), rows[start : start + 2000])
    session.commit()
    return len(traces)
