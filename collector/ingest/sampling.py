"""Deterministic sampling on a hash of the trace id (like OpenTelemetry `TraceIdRatioBased`).

A trace is sampled for a purpose when the first 8 bytes of
`sha256(purpose + ":" + trace_id)`, read as an unsigned big-endian integer, are below
`rate * 2**64`. Every replica and every replay decides alike, with no shared state.

The purpose is part of the hashed text (a per-purpose salt) so the decisions for different
purposes are independent: without it, with rates 0.1 and 0.05 every judge-sampled trace
would also be benchmark-sampled, and the two sets would be correlated subsets of one
another rather than two independent random samples.

Eligibility comes first: `real_users_benchmark` needs ground truth (`relevant_ids` or
`relevance`, possibly arriving later by feedback, or `shown_url`, as the ground-truth
priority says; the caller decides), `judge` needs an answer; optional tag
filters (`settings.sampling.tag_filters`) restrict both purposes to listed tag values.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final

from collector.settings import SamplingSettings

REAL_USERS_BENCHMARK: Final = "real_users_benchmark"
JUDGE: Final = "judge"
PURPOSES: Final = (REAL_USERS_BENCHMARK, JUDGE)

_SCALE = 2**64


def trace_hash(trace_id: str, purpose: str) -> int:
    """The 64-bit unsigned hash the sampling decision compares against its threshold."""
    digest = hashlib.sha256(f"{purpose}:{trace_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


class Sampler:
    """Decides, per trace and purpose, whether the trace is in the sample."""

    def __init__(self, settings: SamplingSettings) -> None:
        self._thresholds = {
            REAL_USERS_BENCHMARK: _threshold(settings.real_users_benchmark),
            JUDGE: _threshold(settings.judge),
        }
        self._tag_filters = {k: frozenset(v) for k, v in settings.tag_filters.items()}

    def decide(self, trace_id: str, purpose: str) -> bool:
        """The hash decision alone (eligibility is checked by `purposes_for`)."""
        try:
            threshold = self._thresholds[purpose]
        except KeyError:
            raise ValueError(
                f"unknown sampling purpose {purpose!r}; known: {', '.join(PURPOSES)}"
            ) from None
        if threshold == 0:
            return False
        return threshold >= _SCALE or trace_hash(trace_id, purpose) < threshold

    def tags_allowed(self, tags: Mapping[str, Any] | None) -> bool:
        """True when every configured tag filter lists the trace's value of that tag."""
        for name, allowed in self._tag_filters.items():
            value = (tags or {}).get(name)
            if value is None or str(value) not in allowed:
                return False
        return True

    def purposes_for(
        self,
        trace_id: str,
        *,
        has_ground_truth: bool,
        has_answer: bool,
        tags: Mapping[str, Any] | None,
    ) -> list[str]:
        """Every purpose this trace is sampled for, given what is known about it now."""
        if not self.tags_allowed(tags):
            return []
        out = []
        if has_ground_truth and self.decide(trace_id, REAL_USERS_BENCHMARK):
            out.append(REAL_USERS_BENCHMARK)
        if has_answer and self.decide(trace_id, JUDGE):
            out.append(JUDGE)
        return out


def _threshold(rate: float) -> int:
    if rate >= 1.0:
        return _SCALE
    return int(rate * _SCALE)
