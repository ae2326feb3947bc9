"""The topics job on planted clusters of stored embeddings, on SQLite and PostgreSQL: topics
found, every trace given one, ids kept across re-clusterings, a new cluster a new topic."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from collector.jobs.catalog import topic_assignment
from collector.jobs.catalog import topics as topics_job
from collector.jobs.catalog.topics import TopicsJob, definition, sample_key
from collector.jobs.run.definition import JobEnvironment
from collector.jobs.windows.window import parse_windows
from collector.settings import Settings, TopicSettings
from collector.store.embeddings import SqlEmbeddingStore
from collector.store.models import Topic, Trace, TraceTopic
from collector.store.session import make_engine, make_session_factory
from collector.store.topics import iter_assignments, load_topics
from tests.jobs.helpers import add_trace

MODEL = "planted-test-model"
DIM = 48
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
PHRASES = (
    ("card", "delivery", "late", "arrive", "track", "courier", "parcel", "address"),
    ("password", "reset", "forgot", "login", "locked", "account", "link", "email"),
    ("exchange", "rate", "currency", "dollars", "euros", "fee", "convert", "abroad"),
    ("карта", "доставка", "курьер", "адрес", "задерживается", "посылка", "придёт", "отследить"),
)
NEW_PHRASES = ("mortgage", "application", "cancel", "status", "loan", "house", "bank", "rate")
WORDS = 4
NOISE = 0.35
"""Per-dimension noise x sqrt(DIM) around a cluster's centre (cosine to it ~0.94)."""


@pytest.fixture
def factory(db_url: str) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(db_url)
    try:
        yield make_session_factory(engine)
    finally:
        engine.dispose()


def _centres(count: int, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(count, DIM))
    unit: np.ndarray = centres / np.linalg.norm(centres, axis=1, keepdims=True)
    return unit


CENTRES = _centres(len(PHRASES) + 1)


def _plant(
    factory: sessionmaker[Session],
    cluster: int,
    count: int,
    start: int,
    ts: datetime,
    phrases: tuple[str, ...],
    seed: int,
) -> dict[str, int]:
    """`count` traces of planted cluster `cluster` (ids from `start`), their questions'
    vectors stored in the embeddings table; returns trace id -> cluster."""
    rng = np.random.default_rng(seed)
    rows: dict[str, np.ndarray] = {}
    planted = {}
    with factory() as session:
        for i in range(start, start + count):
            trace_id = f"c{cluster}-{i}"
            words = rng.choice(len(phrases), WORDS, replace=False)
            question = " ".join(phrases[w] for w in words) + f" #{i}"
            vector = CENTRES[cluster] + rng.normal(scale=NOISE / np.sqrt(DIM), size=DIM)
            rows[question] = (vector / np.linalg.norm(vector)).astype(np.float32)
            add_trace(session, trace_id, ts - timedelta(minutes=i % 50), question=question)
            planted[trace_id] = cluster
        session.commit()
    SqlEmbeddingStore(factory).save(MODEL, rows)
    return planted


def _job(factory: sessionmaker[Session], **settings: object) -> TopicsJob:
    cfg = TopicSettings(**{"min_topic_size": 10, "recluster_every": "24h", **settings})
    env = JobEnvironment(session_factory=factory, windows=parse_windows(["1h"]), group_labels=())
    return TopicsJob(definition(Settings()), env, topics=cfg, model=MODEL)


def _assigned(factory: sessionmaker[Session]) -> dict[str, int | None]:
    with factory() as session:
        rows = session.execute(select(TraceTopic.trace_id, TraceTopic.topic_id))
        return {trace_id: topic_id for trace_id, topic_id in rows}


def _topic_of_cluster(planted: dict[str, int], assigned: dict[str, int | None]) -> dict[int, int]:
    """Each planted cluster's most common topic id."""
    votes: dict[int, Counter[int | None]] = {}
    for trace_id, cluster in planted.items():
        votes.setdefault(cluster, Counter())[assigned.get(trace_id)] += 1
    out = {}
    for cluster, counter in votes.items():
        topic, _ = counter.most_common(1)[0]
        assert topic is not None
        out[cluster] = topic
    return out


def test_topics_are_found_kept_across_reclusterings_and_a_new_cluster_is_new(
    factory: sessionmaker[Session],
) -> None:
    planted: dict[str, int] = {}
    for cluster, phrases in enumerate(PHRASES):
        planted |= _plant(factory, cluster, 60, 0, NOW, phrases, seed=cluster)
    job = _job(factory)

    report = job.run(NOW)
    assert report.status == "ok"
    with factory() as session:
        topics = load_topics(session)
    assert len(topics) == len(PHRASES)
    assigned = _assigned(factory)
    assert set(assigned) == set(planted)
    first = _topic_of_cluster(planted, assigned)
    assert len(set(first.values())) == len(PHRASES)  # one topic per planted cluster
    pure = sum(assigned[t] == first[c] for t, c in planted.items()) / len(planted)
    assert pure >= 0.95
    by_id = {t.id: t for t in topics}
    russian = by_id[first[3]]
    assert "ru" in russian.keywords and "en" not in russian.keywords
    assert set(russian.keywords["ru"]) <= set(PHRASES[3])
    assert set(by_id[first[0]].keywords["en"]) <= set(PHRASES[0])
    assert len(russian.examples) == 5
    assert all(set(example.split()[:WORDS]) <= set(PHRASES[3]) for example in russian.examples)
    assert russian.model == MODEL and russian.params["min_size"] == 10

    # between re-clusterings, new traces (embedded since) get their nearest topic
    later: dict[str, int] = {}
    for cluster, phrases in enumerate(PHRASES):
        later |= _plant(
            factory, cluster, 20, 100, NOW + timedelta(hours=1), phrases, seed=10 + cluster
        )
    job.run(NOW + timedelta(hours=1))
    assigned = _assigned(factory)
    with factory() as session:
        assert len(load_topics(session)) == len(PHRASES)  # not re-clustered
    assert sum(assigned[t] == first[c] for t, c in later.items()) / len(later) >= 0.95

    # a re-clustering of steady traffic keeps the topics' ids
    steady: dict[str, int] = {}
    for cluster, phrases in enumerate(PHRASES):
        steady |= _plant(
            factory, cluster, 60, 200, NOW + timedelta(hours=25), phrases, seed=20 + cluster
        )
    before = _assigned(factory)
    job.run(NOW + timedelta(hours=25))
    after = _assigned(factory)
    kept = sum(after[t] == before[t] for t in before) / len(before)
    assert kept >= 0.95
    assert _topic_of_cluster(planted | later | steady, after) == first

    # a new kind of question becomes a new topic with a new id; the others keep theirs
    fresh = _plant(factory, 4, 60, 0, NOW + timedelta(hours=50), NEW_PHRASES, seed=40)
    job.run(NOW + timedelta(hours=50))
    after = _assigned(factory)
    ids = _topic_of_cluster(planted | later | steady | fresh, after)
    assert {c: ids[c] for c in first} == first
    assert ids[4] not in first.values()
    assert ids[4] >= len(PHRASES)
    assert sum(after[t] == ids[4] for t in fresh) / len(fresh) >= 0.95
    with factory() as session:
        stored = {t.id: t for t in load_topics(session)}
    assert set(stored[ids[4]].keywords["en"]) <= set(NEW_PHRASES)
    assert stored[ids[4]].first_seen == NOW + timedelta(hours=50)
    assert stored[first[0]].first_seen == NOW


def test_too_few_questions_leave_no_topics_and_a_new_model_starts_afresh(
    factory: sessionmaker[Session],
) -> None:
    _plant(factory, 0, 12, 0, NOW, PHRASES[0], seed=1)
    job = _job(factory)
    report = job.run(NOW)
    assert report.status == "skipped" and report.new_traces == 0
    assert "12 sampled questions" in report.message and "embeddings.persist" in report.message
    with factory() as session:
        assert session.scalars(select(Topic)).all() == []
    for cluster in (1, 2):
        _plant(factory, cluster, 40, 0, NOW, PHRASES[cluster], seed=cluster)
    assert job.run(NOW + timedelta(minutes=1)).new_traces == 0  # retried within the hour: no
    assert job.run(NOW + timedelta(hours=2)).new_traces == 92
    with factory() as session:
        old = {t.id for t in load_topics(session)}
    assert old

    other = _job(factory)
    other.model = "another-model"
    other.run(NOW + timedelta(hours=3))  # no vectors of that model: the topics stay
    with factory() as session:
        assert {t.id for t in load_topics(session)} == old
    with factory() as session:
        texts = [q for (q,) in session.execute(select(Trace.question))]
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(len(texts), DIM))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    shift = {
        q: (v + CENTRES[len(q) % 3]).astype(np.float32) for q, v in zip(texts, vectors, strict=True)
    }
    SqlEmbeddingStore(factory).save("another-model", shift)
    other.run(NOW + timedelta(hours=4))  # centroids of another model: the topics start afresh
    with factory() as session:
        now_active = load_topics(session)
        retired = session.scalars(select(Topic).where(Topic.active.is_(False))).all()
    assert now_active and {t.model for t in now_active} == {"another-model"}
    assert min(t.id for t in now_active) > max(old)
    assert {t.id for t in retired} == old
    assert set(_assigned(factory).values()) <= {t.id for t in now_active} | {None}


def test_the_sample_is_deterministic_and_bounded(factory: sessionmaker[Session]) -> None:
    for cluster in range(2):
        _plant(factory, cluster, 50, 0, NOW, PHRASES[cluster], seed=cluster)
    job = _job(factory, sample_size=30)
    with factory() as session:
        sample = job.sample(session, NOW)
        again = job.sample(session, NOW)
    assert sample == again and len(sample) == 30
    keys = sorted(sample_key(f"c{c}-{i}") for c in range(2) for i in range(50))
    assert {sample_key(t) for t, _ in sample} == set(keys[:30])


def test_assignment_and_export_run_in_pages(
    factory: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    planted: dict[str, int] = {}
    for cluster in range(3):
        planted |= _plant(factory, cluster, 30, 0, NOW, PHRASES[cluster], seed=cluster)
    monkeypatch.setattr(topics_job, "PAGE", 7)
    monkeypatch.setattr(topic_assignment, "PAGE", 7)
    _job(factory).run(NOW)
    assigned = _assigned(factory)
    assert set(assigned) == set(planted)
    with factory() as session:
        paged = list(iter_assignments(session, NOW - timedelta(days=1), batch=7))
    assert sorted(paged) == sorted(assigned.items())
    assert len({trace_id for trace_id, _ in paged}) == len(paged)


def test_old_assignments_are_pruned_past_the_lookback_and_retention(
    factory: sessionmaker[Session],
) -> None:
    for cluster in range(3):
        _plant(factory, cluster, 30, 0, NOW, PHRASES[cluster], seed=cluster)
    job = _job(factory, lookback="1d", recluster_every="7d")
    job.run(NOW)
    assert len(_assigned(factory)) == 90
    job.run(NOW + timedelta(days=29))
    assert len(_assigned(factory)) == 90  # the results' retention (30d) keeps them
    job.run(NOW + timedelta(days=31))
    assert _assigned(factory) == {}
