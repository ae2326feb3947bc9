"""Counters of one judge client's lifetime, for progress bars, exporters and run summaries.

The client's steps count into one `JudgeStats`; nothing reads it back to decide anything
except `unpriced_models`, which `cost.py` also uses to price a model only once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class JudgeStats:
    """Counters for progress bars and exporters (this client's lifetime)."""

    calls: int = 0
    cache_hits: int = 0
    errors: int = 0
    retries: int = 0
    repairs: int = 0
    budget_skips: int = 0
    cost_usd: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    unpriced_models: set[str] = field(default_factory=set)
    answered: int = 0
    """Requests that got a reply from the model's server (usable or not)."""
    failures: dict[str, int] = field(default_factory=dict)
    """Requests that finally failed, by error type (`connection_error`, `timeout`, ...)."""

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def as_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "errors": self.errors,
            "retries": self.retries,
            "repairs": self.repairs,
            "budget_skips": self.budget_skips,
            "cost_usd": round(self.cost_usd, 6),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }
