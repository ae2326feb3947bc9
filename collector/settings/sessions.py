"""Conversations (`sessions`): when a session counts as over, so that its outcome (resolved,
re-asked, escalated, abandoned) is computed, and which of them the LLM judge rates
(`collector/jobs/catalog/sessions.py`, issue 42)."""

from __future__ import annotations

from pydantic import Field, field_validator

from collector.settings.durations import parse_duration
from collector.settings.fields import Group


class SessionSettings(Group):
    idle: str = "5m"
    """A session (the traces sharing a `session_id`) is closed after this long without a
    new turn, by the turns' timestamps; its outcome is computed then. A turn arriving later
    reopens it: the outcome is computed again and replaces the first (counted once)."""
    max_turns: int = Field(50, ge=2, le=1000)
    """A session is closed as soon as it has this many turns; later turns are not part of
    it (they do not reopen it). Bounds the work and memory one session costs."""
    lookback: str = "24h"
    """How long after its first turn a session is followed: turns later than this are not
    part of it, and sessions that started earlier are not closed or reopened any more."""

    judge_rate: float = Field(0.1, ge=0.0, le=1.0)
    """Share of closed sessions (0-1, decided on the session id's hash) whose outcome the
    LLM judge also rates: completeness and frustration. Only with a judge configured; a
    reopened session is judged again."""
    judge_per_run: int = Field(20, ge=1)
    """At most this many sampled sessions are judged per run of the sessions job (two
    judge calls per model each); the rest are judged by the next runs. The judge's own
    call and spend budgets apply on top."""

    @field_validator("idle", "lookback")
    @classmethod
    def _duration(cls, value: str) -> str:
        parse_duration(value)
        return value
