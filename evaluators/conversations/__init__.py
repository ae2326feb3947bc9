"""Conversation outcomes (issue 42): did the user get what they came for?

Pure detection over a session's turns, no judge needed: re-asks (a later paraphrase of an
earlier question), escalations (asking for a person, or tagged), abandonment, explicit
feedback; and the judged outcome's prompts (`evaluators.conversations.judged`).
"""

from evaluators.conversations.escalation import is_escalation
from evaluators.conversations.outcome import session_outcome
from evaluators.conversations.reask import (
    DEFAULT_RULE,
    ReaskRule,
    is_follow_up,
    is_re_ask,
    re_ask_pairs,
)
from evaluators.conversations.threshold import outcome_signature, re_ask_threshold
from evaluators.conversations.types import SessionOutcome, Turn, TurnOutcome

__all__ = [
    "DEFAULT_RULE",
    "ReaskRule",
    "SessionOutcome",
    "Turn",
    "TurnOutcome",
    "is_escalation",
    "is_follow_up",
    "is_re_ask",
    "outcome_signature",
    "re_ask_pairs",
    "re_ask_threshold",
    "session_outcome",
]
