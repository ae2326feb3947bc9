"""Text embeddings kept across job runs and restarts, so a text is encoded once.

Every evaluation wraps the embedder in a per-call `CachingEmbedder`; that alone would
re-encode, on every run, the questions the UX job passes as look-back context (the past
hour's questions, already encoded when they were new), and each of the UX job's dataset
evaluations (one per window and group label) would encode the same session questions
again. `RecentEmbeddings` keeps the rows of the most recently used `max_texts` texts in
memory (least recently used dropped first), shared by all jobs of the process.

Behind the memory layer sits an optional `EmbeddingStore` (the `embeddings` table): texts
missing from memory are looked up there in one bulk read before anything is encoded, and
what had to be encoded is written back in one bulk write. After a restart the jobs thus
read the look-back's vectors instead of re-encoding hours of questions. The store is a
cache: when it fails, the failure is logged and counted and the texts are encoded.
Memory: `max_texts` float32 rows (50,000 x 384 dims = 77 MB) plus the texts.

Loading the model creates ~400,000 objects the garbage collector tracks (torch modules,
tokenizer tables) that live as long as the process. A job run allocates enough to trigger
a full collection about once per job, and each rescanned all of them (~0.3-0.45 s on the
benchmark machine, three times per incremental run of the non-judge jobs). After the
first encode has loaded the model, the objects alive then are collected once and frozen
(`gc.freeze`, once per process): they are no longer rescanned; objects freed later by
reference counting are still freed.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import numpy as np
from sqlalchemy.exc import SQLAlchemyError

logger = logging.getLogger(__name__)

DEFAULT_MAX_TEXTS = 50_000
PRUNE_EVERY_S = 3600.0
"""How often (at most) rows older than the retention are deleted from the store."""


_frozen = threading.Event()


def freeze_long_lived() -> bool:
    """Collect, then move every tracked object to the permanent generation (once per
    process); True when this call did it."""
    if _frozen.is_set():
        return False
    _frozen.set()
    gc.collect()
    gc.freeze()
    return True


class EmbeddingStore(Protocol):
    """Persistent rows by (model, text); SQL failures raise `SQLAlchemyError`."""

    def load(self, model: str, texts: Iterable[str]) -> dict[str, np.ndarray]: ...

    def save(self, model: str, rows: Mapping[str, np.ndarray]) -> int: ...

    def prune(self, before: datetime) -> int: ...


class RecentEmbeddings:
    """An LRU of text -> unit float32 row, over an optional store, over an encoder.

    Thread-safe. Counters: `hits` (served from memory), `loaded` (read from the store),
    `encoded` and `encode_s` (handed to the encoder and its seconds), `store_s` (seconds
    in store reads and writes), `store_errors`.
    """

    def __init__(
        self,
        inner: Any,
        max_texts: int = DEFAULT_MAX_TEXTS,
        *,
        store: EmbeddingStore | None = None,
        retention: timedelta | None = None,
    ) -> None:
        if max_texts < 1:
            raise ValueError("max_texts must be at least 1")
        self.inner = inner
        self.max_texts = max_texts
        self.store = store
        self.retention = retention
        self._rows: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._pruned_at: float | None = None
        self.hits = 0
        self.loaded = 0
        self.encoded = 0
        """Texts handed to the inner encoder so far (misses in memory and store)."""
        self.encode_s = 0.0
        """Seconds spent in the inner encoder so far."""
        self.store_s = 0.0
        self.store_errors = 0

    @property
    def model_name(self) -> str:
        return str(self.inner.model_name)

    def __len__(self) -> int:
        return len(self._rows)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("encode takes a sequence of texts, not one string")
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._rows))
        # Store and encoder calls happen outside our lock, so a cache hit elsewhere never
        # waits for them (the inner encoder serializes model calls itself).
        stored = self._load(missing) if missing else {}
        if stored:
            missing = [t for t in missing if t not in stored]
        started = time.perf_counter()
        new = np.asarray(self.inner.encode(missing), dtype=np.float32) if missing else None
        spent = time.perf_counter() - started
        fresh: dict[str, np.ndarray] = {}
        if new is not None:
            freeze_long_lived()  # the model is loaded now
            # Copies, so an evicted row does not keep its whole batch alive.
            fresh = {text: row.copy() for text, row in zip(missing, new, strict=True)}
            self._save(fresh)
        with self._lock:
            found: dict[str, np.ndarray] = {}
            for text in texts:
                row = self._rows.get(text)
                if row is not None:
                    self._rows.move_to_end(text)
                    found[text] = row
            self.hits += sum(1 for t in texts if t in found)
            for source in (stored, fresh):
                for text, row in source.items():
                    found[text] = row
                    self._rows[text] = row
                    self._rows.move_to_end(text)
            self.loaded += len(stored)
            if new is not None:
                self.encoded += len(missing)
                self.encode_s += spent
            while len(self._rows) > self.max_texts:
                self._rows.popitem(last=False)
        self._maybe_prune()
        if not texts:
            return np.asarray(self.inner.encode([]), dtype=np.float32)
        return np.stack([found[t] for t in texts]).astype(np.float32, copy=False)

    # -- store --------------------------------------------------------------------------

    def _load(self, texts: list[str]) -> dict[str, np.ndarray]:
        if self.store is None:
            return {}
        started = time.perf_counter()
        try:
            return self.store.load(self.model_name, texts)
        except SQLAlchemyError:
            self.store_errors += 1
            logger.exception("embedding store: read failed; encoding %d texts", len(texts))
            return {}
        finally:
            self.store_s += time.perf_counter() - started

    def _save(self, rows: Mapping[str, np.ndarray]) -> None:
        if self.store is None or not rows:
            return
        started = time.perf_counter()
        try:
            self.store.save(self.model_name, rows)
        except SQLAlchemyError:
            self.store_errors += 1
            logger.exception("embedding store: write of %d rows failed", len(rows))
        finally:
            self.store_s += time.perf_counter() - started

    def _maybe_prune(self) -> None:
        if self.store is None or self.retention is None:
            return
        now = time.monotonic()
        if self._pruned_at is not None and now - self._pruned_at < PRUNE_EVERY_S:
            return
        self._pruned_at = now
        try:
            deleted = self.store.prune(datetime.now(UTC) - self.retention)
        except SQLAlchemyError:
            self.store_errors += 1
            logger.exception("embedding store: pruning failed")
            return
        if deleted:
            logger.info("embedding store: deleted %d rows older than %s", deleted, self.retention)
