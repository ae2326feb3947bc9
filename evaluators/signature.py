"""How a number was made, carried by every result (like sacrebleu's signatures)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

EVALUATOR_VERSION = "0.1.0"


@dataclass(frozen=True, slots=True)
class Signature:
    evaluator_version: str = EVALUATOR_VERSION
    judge_model: str | None = None
    prompt_hash: str | None = None
    embedding_model: str | None = None
    thresholds: str | None = None
    """Similarity thresholds compared against, e.g. "cache=0.71(cal)" (see thresholds.py)."""

    def __str__(self) -> str:
        parts = [f"ragpulse:{self.evaluator_version}"]
        if self.judge_model:
            parts.append(f"judge:{self.judge_model}")
        if self.prompt_hash:
            parts.append(f"prompt:{self.prompt_hash}")
        if self.embedding_model:
            parts.append(f"emb:{self.embedding_model}")
        if self.thresholds:
            parts.append(f"thr:{self.thresholds}")
        return "|".join(parts)


def text_hash(text: str, length: int = 12) -> str:
    """A short stable hash of a prompt template or input, for signatures and cache keys."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]
