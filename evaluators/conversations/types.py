"""A conversation's turns as the detectors see them, and the outcomes they find.

A session is the traces sharing a `session_id`, in time order; each is one `Turn`. The
outcomes are immutable values: one `TurnOutcome` per turn and a `SessionOutcome` for the
whole conversation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Turn:
    """One question of a session and what came of it."""

    trace_id: str
    question: str
    answer: str | None
    ts: float
    """Epoch seconds."""
    tags: Mapping[str, Any] = field(default_factory=dict)
    """The trace's tags; a truthy `escalated` is an escalation the application tagged."""
    feedback: float | None = None
    """Explicit feedback score (negative = bad), None without feedback."""
    bad_answer: bool = False
    """The judge scored the answer badly or retrieval came back empty."""


@dataclass(frozen=True)
class TurnOutcome:
    """What one turn shows."""

    trace_id: str
    re_asked: bool
    """This turn's answer was followed by a re-ask (a later paraphrase of its question)."""
    escalation: bool
    """This turn asks for a person, or the application tagged it escalated."""


@dataclass(frozen=True)
class SessionOutcome:
    """What a closed session shows: its turns' outcomes and the session's."""

    turns: tuple[TurnOutcome, ...]
    re_asks: int
    """Turns that re-ask an earlier question of the session."""
    escalated: bool
    abandoned: bool
    """The session ended right after a badly scored answer or after a re-ask."""
    negative_feedback: bool
    resolved: bool
    """No re-ask, no escalation, no negative feedback."""
    turns_to_resolution: int | None
    """The number of turns when resolved, else None."""
