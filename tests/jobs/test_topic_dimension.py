"""`topic` as a dimension, both databases (issue 41): a retrieval drop confined to one
planted intent is attributed to that intent's topic by `explain`, the windows get a
`topic` group, and outcomes stored before their trace had a topic move to it exactly once.

Four planted intents (clusters of stored question vectors, as in `test_topics_job`), a
week of baseline with hit@1 0.8 everywhere, then an hour where intent 2's retrieval fails
(hit@1 0.1) and the others' does not. The retrieval job scores every trace before the
topics job has run (no topic yet), then the topics job clusters and assigns, then the
retrieval job runs again: its stored outcomes must now carry their topic, and the bucket
sums still equal the stored outcomes' sums.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from collector.jobs.catalog.topics import TopicsJob
from collector.jobs.catalog.topics import definition as topics_definition
from collector.jobs.queries.explain import explain
from collector.jobs.run.definition import JobEnvironment
from collector.jobs.run.engine import IncrementalJob
from collector.jobs.scheduler import definitions
from collector.jobs.windows.window import parse_windows
from collector.settings import Settings, TopicSettings, load_settings
from collector.store.embeddings import SqlEmbeddingStore
from collector.store.models import JobOutcome, MetricResult
from collector.store.session import make_engine, make_session_factory
from collector.store.topics import topic_names
from ragpulse.cli import main
from ragpulse.job_setup import job_environment
from tests.jobs.helpers import add_trace, assert_buckets_match_outcomes

JOB = "real_users_benchmark"
MODEL = "planted-topic-dimension"
DIM = 48
NOW = datetime(2026, 12, 1, 12, 0, 30, tzinfo=UTC)
WORDS = (
    ("card", "delivery", "courier", "parcel", "address", "arrive", "track", "late"),
    ("password", "reset", "forgot", "login", "locked", "account", "link", "email"),
    ("exchange", "rate", "currency", "dollars", "euros", "fee", "convert", "abroad"),
    ("карта", "доставка", "курьер", "адрес", "задерживается", "посылка", "придёт", "когда"),
)
DROPPED = 2
"""The planted intent whose retrieval fails in the last hour."""


def _plant(factory: sessionmaker[Session]) -> dict[str, int]:
    """The traces and their questions' stored vectors; returns trace id -> intent."""
    rng = np.random.default_rng(41)
    centres = rng.normal(size=(len(WORDS), DIM))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    vectors: dict[str, np.ndarray] = {}
    intents: dict[str, int] = {}
    with factory() as session:
        for intent, words in enumerate(WORDS):
            for i in range(100):
                recent = i < 40
                ts = NOW - (
                    timedelta(minutes=1 + i)
                    if recent
                    else timedelta(hours=1, minutes=10 + (i * 97) % (6 * 24 * 60))
                )
                rate = 0.1 if recent and intent == DROPPED else 0.8
                hit = rng.random() < rate
                picked = rng.choice(len(words), 4, replace=False)
                question = " ".join(words[w] for w in picked) + f" #{intent}-{i}"
                vector = centres[intent] + rng.normal(scale=0.35 / np.sqrt(DIM), size=DIM)
                vectors[question] = (vector / np.linalg.norm(vector)).astype(np.float32)
                trace_id = f"i{intent}-{i:03d}"
                add_trace(
                    session,
                    trace_id,
                    ts,
                    question=question,
                    purposes=(JOB,),
                    contexts=[{"id": "d1"}, {"id": "d2"}],
                    relevant_ids=["d1" if hit else "d2"],
                    tags={"tenant": "acme" if i % 2 else "beta"},
                )
                intents[trace_id] = intent
        session.commit()
    SqlEmbeddingStore(factory).save(MODEL, vectors)
    return intents


def _topics_of_outcomes(factory: sessionmaker[Session]) -> dict[str, str | None]:
    with factory() as session:
        rows = session.execute(
            select(JobOutcome.trace_id, JobOutcome.groups, JobOutcome.slices).where(
                JobOutcome.job == JOB
            )
        ).all()
    out: dict[str, str | None] = {}
    for trace_id, groups, slices in rows:
        grouped = (groups or {}).get("topic")
        assert grouped == (slices or {}).get("topic"), trace_id
        out[trace_id] = grouped
    return out


def test_a_drop_in_one_intent_is_attributed_to_its_topic(
    db_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = load_settings(database={"url": db_url}, scheduler={"jobs": [JOB]})
    assert "topic" in settings.scheduler.group_labels
    assert "topic" in settings.slices.dimensions
    engine = make_engine(db_url)
    factory = make_session_factory(engine)
    intents = _plant(factory)
    env = job_environment(settings, engine, embedder=None, judge=None)
    retrieval = IncrementalJob(definitions(settings)[JOB], env)
    assert retrieval.run(NOW - timedelta(seconds=20)).new_traces == 400
    assert set(_topics_of_outcomes(factory).values()) == {None}  # no topics yet

    topics = TopicsJob(
        topics_definition(Settings()),
        JobEnvironment(session_factory=factory, windows=parse_windows(["1h"]), group_labels=()),
        topics=TopicSettings(min_topic_size=10, recluster_every="24h"),
        model=MODEL,
    )
    report = topics.run(NOW - timedelta(seconds=10))
    assert report.status == "ok", report.message
    assert retrieval.run(NOW).new_traces == 0  # nothing scored again: only moved

    grouped = _topics_of_outcomes(factory)
    votes: dict[int, Counter[str | None]] = {}
    for trace_id, topic in grouped.items():
        votes.setdefault(intents[trace_id], Counter())[topic] += 1
    topic_of = {intent: counter.most_common(1)[0][0] for intent, counter in votes.items()}
    assert None not in topic_of.values() and len(set(topic_of.values())) == len(WORDS)
    for intent, counter in votes.items():
        assert counter[topic_of[intent]] >= 95, (intent, counter)
    with factory() as session:
        assert_buckets_match_outcomes(session, JOB)
        keys = set(
            session.execute(
                select(MetricResult.group_key).where(
                    MetricResult.job == JOB,
                    MetricResult.metric == "hit_rate@1",
                    MetricResult.window == "1h",
                    MetricResult.window_end == NOW,
                )
            ).scalars()
        )
        assert {f"topic={topic_of[i]}" for i in range(len(WORDS))} <= keys, keys

        found = explain(
            session,
            jobs=[JOB],
            metric="hit_rate@1",
            since=NOW - timedelta(hours=1),
            until=NOW,
            baseline=timedelta(days=7),
            dimensions=("tenant", "topic"),
        )
        names = topic_names(session)
    engine.dispose()
    assert found is not None and found.delta < -0.1
    assert found.top is not None
    assert found.top.slice == (("topic", topic_of[DROPPED]),), found.top
    assert found.top.fraction > 0.7
    # the headline names the topic with its label: its top keywords
    headline = found.named(names).headline()
    assert f"is topic {topic_of[DROPPED]} (" in headline, headline
    assert any(word in headline for word in WORDS[DROPPED]), headline

    # the operator's commands: explain by topic as JSON, the topic's worst traces
    monkeypatch.setenv("RAGPULSE_DATABASE__URL", db_url)
    until = ["--until", NOW.isoformat()]
    argv = ["explain", "--metric", "hit_rate@1", "--dimensions", "topic", "--json", *until]
    assert main(argv) == 0
    top = json.loads(capsys.readouterr().out)["slices"][0]
    assert top["slice"] == {"topic": topic_of[DROPPED]}
    assert top["name"].startswith(f"topic {topic_of[DROPPED]} (")
    argv = ["traces", "--metric", "hit_rate@1", "--topic", topic_of[DROPPED], "--json", *until]
    assert main([*argv, "--worst", "100"]) == 0
    listed = [json.loads(line)["trace_id"] for line in capsys.readouterr().out.splitlines()]
    assert listed and {intents[t] for t in listed} == {DROPPED}
