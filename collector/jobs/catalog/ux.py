"""Tier UX: semantic and actual cache hit rate, context preservation, multi-turn consistency,
and the answers' latency (`latency_ms`, every trace: what a latency SLO counts).

`cache_hit_rate` compares each new question with the earlier ones within the look-back,
so those are passed as context; the session metrics look at traces that have a session.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select

from collector.jobs.run.definition import JobDefinition
from collector.settings import Settings
from collector.store.models import Trace

NAME = "ux"
METRICS = (
    "cache_hit_rate",
    "cache_hit_rate_actual",
    "context_preservation",
    "multi_turn_consistency",
    "latency_ms",
)


def in_session(query: Select[Any]) -> Select[Any]:
    return query.where(Trace.session_id.is_not(None))


def definition(settings: Settings) -> JobDefinition:
    return JobDefinition(
        name=NAME,
        metrics=METRICS,
        description="cache hit rate (semantic and actual), dialog quality and latency",
        context_lookback_s=settings.ux.cache_lookback_s,
        dataset_candidates=in_session,
    )
