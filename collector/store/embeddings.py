"""The `embeddings` table: text embeddings kept across restarts, read and written in bulk.

A row is (model, SHA-256 of the text, float32 bytes); the text itself is not stored. A
job run asks for all the texts it needs at once (`load`: one query per `CHUNK` hashes)
and stores what it had to encode (`save`: one multi-row INSERT ... ON CONFLICT DO
NOTHING, so replicas encoding the same text at once never fail). Rows older than the
retention are deleted by `prune`; a text still in use is then simply encoded again.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from datetime import datetime

import numpy as np
from sqlalchemy import Insert, delete, func, insert, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, sessionmaker

from collector.store.models import EmbeddingRow, utcnow
from evaluators.signature import text_hash

CHUNK = 1000
"""Hashes per SELECT and rows per INSERT (well under SQLite's bound-parameter limit)."""


def embedding_key(text: str) -> str:
    """SHA-256 hex of the UTF-8 text: the table's key for it (with the model name)."""
    return text_hash(text, 64)


class SqlEmbeddingStore:
    """Bulk get/put of embedding rows by (model, text) in SQL."""

    def __init__(self, session_factory: sessionmaker[Session]) -> None:
        self._sessions = session_factory
        bind = session_factory.kw.get("bind")
        self._dialect = bind.dialect.name if bind is not None else ""
        # SQLite has one writer at a time; serialize ours rather than spin on busy timeouts.
        self._write_lock = threading.Lock()

    def load(self, model: str, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """Stored rows of those `texts` that have one (float32, read-only views)."""
        by_hash: dict[str, str] = {}
        for text in texts:
            by_hash.setdefault(embedding_key(text), text)
        if not by_hash:
            return {}
        hashes = list(by_hash)
        found: dict[str, np.ndarray] = {}
        with self._sessions() as session:
            for start in range(0, len(hashes), CHUNK):
                part = hashes[start : start + CHUNK]
                rows = session.execute(
                    select(EmbeddingRow.text_hash, EmbeddingRow.vector).where(
                        EmbeddingRow.model == model, EmbeddingRow.text_hash.in_(part)
                    )
                )
                for text_hash, vector in rows:
                    found[by_hash[text_hash]] = np.frombuffer(vector, dtype="<f4")
        return found

    def save(self, model: str, rows: Mapping[str, np.ndarray]) -> int:
        """Store the rows of texts not stored yet; returns how many were sent."""
        if not rows:
            return 0
        now = utcnow()
        records = [
            {
                "model": model,
                "text_hash": embedding_key(text),
                "vector": np.ascontiguousarray(row, dtype="<f4").tobytes(),
                "created_at": now,
            }
            for text, row in rows.items()
        ]
        with self._write_lock, self._sessions() as session:
            for start in range(0, len(records), CHUNK):
                session.execute(self._insert(), records[start : start + CHUNK])
            session.commit()
        return len(records)

    def prune(self, before: datetime) -> int:
        """Delete rows created before `before`; returns how many."""
        with self._write_lock, self._sessions() as session:
            result = session.execute(delete(EmbeddingRow).where(EmbeddingRow.created_at < before))
            session.commit()
        return int(getattr(result, "rowcount", 0) or 0)

    def count(self, model: str | None = None) -> int:
        """Rows stored (for `model`, or all)."""
        query = select(func.count()).select_from(EmbeddingRow)
        if model is not None:
            query = query.where(EmbeddingRow.model == model)
        with self._sessions() as session:
            return int(session.scalar(query) or 0)

    def _insert(self) -> Insert:
        if self._dialect == "postgresql":
            return postgresql.insert(EmbeddingRow).on_conflict_do_nothing(
                index_elements=["model", "text_hash"]
            )
        if self._dialect == "sqlite":
            return sqlite.insert(EmbeddingRow).on_conflict_do_nothing(
                index_elements=["model", "text_hash"]
            )
        return insert(EmbeddingRow)
