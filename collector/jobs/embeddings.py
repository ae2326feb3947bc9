"""Text embeddings kept across job runs, so a text is encoded once while it stays in use.

Every evaluation wraps the embedder in a per-call `CachingEmbedder`; that alone would
re-encode, on every run, the questions the UX job passes as look-back context (the past
hour's questions, already encoded when they were new), and each of the UX job's dataset
evaluations (one per window and group label) would encode the same session questions
again. `RecentEmbeddings` keeps the rows of the most recently used `max_texts` texts
(least recently used dropped first), shared by all jobs of the process.
Memory: `max_texts` float32 rows (50,000 x 384 dims = 77 MB) plus the texts.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

DEFAULT_MAX_TEXTS = 50_000


class RecentEmbeddings:
    """An LRU of text -> unit float32 row in front of another encoder (thread-safe)."""

    def __init__(self, inner: Any, max_texts: int = DEFAULT_MAX_TEXTS) -> None:
        if max_texts < 1:
            raise ValueError("max_texts must be at least 1")
        self.inner = inner
        self.max_texts = max_texts
        self._rows: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.encoded = 0
        """Texts handed to the inner encoder so far (cache misses)."""
        self.encode_s = 0.0
        """Seconds spent in the inner encoder so far."""

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
        # The inner encoder serializes model calls itself; encode outside our lock so a
        # cache hit elsewhere never waits for a long encode.
        started = time.perf_counter()
        new = np.asarray(self.inner.encode(missing), dtype=np.float32) if missing else None
        spent = time.perf_counter() - started
        with self._lock:
            found: dict[str, np.ndarray] = {}
            for text in texts:
                row = self._rows.get(text)
                if row is not None:
                    self._rows.move_to_end(text)
                    found[text] = row
            if new is not None:
                self.encoded += len(missing)
                self.encode_s += spent
                for text, block_row in zip(missing, new, strict=True):
                    # A copy, so an evicted row does not keep its whole batch alive.
                    row = block_row.copy()
                    found[text] = row
                    self._rows[text] = row
                    self._rows.move_to_end(text)
            self.hits += len(texts) - len(missing)
            while len(self._rows) > self.max_texts:
                self._rows.popitem(last=False)
        if not texts:
            return np.asarray(self.inner.encode([]), dtype=np.float32)
        return np.stack([found[t] for t in texts])
