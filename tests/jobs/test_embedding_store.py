"""The jobs' embedding cache persists in the `embeddings` table (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine, update
from sqlalchemy.exc import OperationalError

from collector.jobs.run.embeddings import RecentEmbeddings
from collector.settings import load_settings
from collector.store.embeddings import SqlEmbeddingStore, embedding_key
from collector.store.models import EmbeddingRow
from collector.store.session import make_engine, make_session_factory
from evaluators.embedder import Embedder
from ragpulse.job_setup import job_environment
from tests.fixtures.embedder import VectorEmbedder

VECTORS = {
    "a": [1.0, 0.0, 0.0],
    "b": [0.0, 1.0, 0.0],
    "c": [0.6, 0.8, 0.0],
    "привет": [0.0, 0.0, 1.0],
}


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    eng = make_engine(db_url)
    yield eng
    eng.dispose()


@pytest.fixture
def store(engine: Engine) -> SqlEmbeddingStore:
    return SqlEmbeddingStore(make_session_factory(engine))


def test_a_restart_reads_vectors_instead_of_encoding(store: SqlEmbeddingStore) -> None:
    first = VectorEmbedder(VECTORS)
    before = RecentEmbeddings(first, store=store).encode(["a", "привет", "a", "b"])
    assert first.calls == [["a", "привет", "b"]]
    assert store.count("test-vectors") == 3

    again = VectorEmbedder(VECTORS)  # a new process: empty memory, same database
    cache = RecentEmbeddings(again, store=store)
    after = cache.encode(["b", "c", "a", "привет"])
    assert again.calls == [["c"]]
    assert cache.loaded == 3 and cache.encoded == 1
    assert after.dtype == np.float32 and after.shape == (4, 3)
    np.testing.assert_array_equal(after[[0, 2, 3]], before[[3, 0, 1]])  # bit-exact
    assert store.count() == 4


def test_rows_are_per_model(store: SqlEmbeddingStore) -> None:
    store.save("model-x", {"a": np.ones(3, dtype=np.float32)})
    assert set(store.load("model-x", ["a", "b"])) == {"a"}
    assert store.load("model-y", ["a"]) == {}
    store.save("model-x", {"a": np.zeros(3, dtype=np.float32)})  # conflict: kept as is
    np.testing.assert_array_equal(store.load("model-x", ["a"])["a"], np.ones(3))
    assert store.count("model-x") == 1


def test_bulk_load_beyond_one_chunk(store: SqlEmbeddingStore) -> None:
    rows = {f"text {i}": np.full(4, i, dtype=np.float32) for i in range(2500)}
    assert store.save("m", rows) == 2500
    found = store.load("m", [*rows, "unknown"])
    assert len(found) == 2500
    np.testing.assert_array_equal(found["text 2100"], np.full(4, 2100))


def test_memory_is_bounded_and_evicted_texts_come_from_the_store(
    store: SqlEmbeddingStore,
) -> None:
    inner = VectorEmbedder(VECTORS)
    cache = RecentEmbeddings(inner, max_texts=2, store=store)
    cache.encode(["a", "b", "c"])
    assert len(cache) == 2
    cache.encode(["a"])  # evicted from memory, still stored
    assert inner.encoded == 3
    assert cache.loaded == 1


def test_old_rows_are_pruned(engine: Engine, store: SqlEmbeddingStore) -> None:
    store.save("m", {"old": np.ones(2, dtype=np.float32), "new": np.ones(2, dtype=np.float32)})
    with make_session_factory(engine)() as session:
        session.execute(
            update(EmbeddingRow)
            .where(EmbeddingRow.text_hash == embedding_key("old"))
            .values(created_at=datetime.now(UTC) - timedelta(days=40))
        )
        session.commit()
    cache = RecentEmbeddings(VectorEmbedder(VECTORS), store=store, retention=timedelta(days=30))
    cache.encode(["a"])  # the first encode prunes
    assert set(store.load("m", ["old", "new"])) == {"new"}


class _BrokenStore:
    def load(self, model: str, texts: Iterable[str]) -> dict[str, np.ndarray]:
        raise OperationalError("SELECT", {}, Exception("database is down"))

    def save(self, model: str, rows: Mapping[str, np.ndarray]) -> int:
        raise OperationalError("INSERT", {}, Exception("database is down"))

    def prune(self, before: datetime) -> int:
        return 0


def test_a_failing_store_falls_back_to_encoding() -> None:
    inner = VectorEmbedder(VECTORS)
    cache = RecentEmbeddings(inner, store=_BrokenStore())
    out = cache.encode(["a", "b"])
    assert out.shape == (2, 3)
    assert cache.store_errors == 2 and cache.encoded == 2


def test_settings_wire_the_store(engine: Engine) -> None:
    env = job_environment(load_settings(), engine, embedder=VectorEmbedder(VECTORS), judge=None)
    assert isinstance(env.embedder, RecentEmbeddings)
    assert env.embedder.max_texts == 50_000
    # default: persisted on PostgreSQL; SQLite keeps its single writer for the consumer
    if engine.dialect.name == "postgresql":
        assert isinstance(env.embedder.store, SqlEmbeddingStore)
    else:
        assert env.embedder.store is None
    on = load_settings(embeddings={"persist": True})
    env = job_environment(on, engine, embedder=VectorEmbedder(VECTORS), judge=None)
    assert isinstance(env.embedder.store, SqlEmbeddingStore)
    off = load_settings(embeddings={"persist": False, "cache_texts": 10})
    env = job_environment(off, engine, embedder=VectorEmbedder(VECTORS), judge=None)
    assert env.embedder.store is None and env.embedder.max_texts == 10


class _Counting:
    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_name = inner.model_name
        self.texts = 0

    def encode(self, texts: Any) -> np.ndarray:
        self.texts += len(texts)
        return self.inner.encode(texts)


def test_real_model_vectors_round_trip(store: SqlEmbeddingStore, embedder: Embedder) -> None:
    texts = ["How do I request vacation?", "Как оформить отпуск?"]
    first = RecentEmbeddings(_Counting(embedder), store=store).encode(texts)
    counting = _Counting(embedder)
    second = RecentEmbeddings(counting, store=store).encode(texts)
    assert counting.texts == 0
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(np.linalg.norm(second, axis=1), 1.0, rtol=1e-5)


def test_the_first_encode_freezes_what_the_model_loaded() -> None:
    import gc

    from collector.jobs.run.embeddings import freeze_long_lived

    RecentEmbeddings(VectorEmbedder(VECTORS)).encode(["a"])
    assert gc.get_freeze_count() > 0
    assert freeze_long_lived() is False  # once per process
