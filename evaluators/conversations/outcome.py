"""A closed session's outcome from its turns: re-asks, escalation, abandonment, feedback.

Per turn: was its answer followed by a re-ask (`evaluators.conversations.reask`), does it
ask for a person (`evaluators.conversations.escalation`). Per session (issue 42):
- re_asks: the turns that re-ask an earlier question;
- escalated: any turn is an escalation;
- abandoned: the last turn's answer scored badly (judge, empty retrieval) or the last
  turn is itself a re-ask: the user left without an answer that worked;
- negative_feedback: any explicit feedback below zero;
- resolved: no re-ask, no escalation and no negative feedback; turns_to_resolution is then
  the number of turns.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from evaluators.conversations.escalation import is_escalation
from evaluators.conversations.reask import re_ask_pairs
from evaluators.conversations.types import SessionOutcome, Turn, TurnOutcome


def session_outcome(
    turns: Sequence[Turn], embeddings: np.ndarray, threshold: float
) -> SessionOutcome:
    """The outcome of a session: `turns` in time order, `embeddings` one unit-norm row per
    turn's question in the same order, `threshold` the embedding model's calibrated
    paraphrase threshold τ (the re-ask decision reads the cosine's margin from it)."""
    if not turns:
        raise ValueError("a session has at least one turn")
    rows = np.asarray(embeddings, dtype=np.float64)
    if rows.ndim != 2 or rows.shape[0] != len(turns):
        raise ValueError(
            f"embeddings must be one row per turn: {len(turns)} turns, shape {rows.shape}"
        )
    # unit rows are promised; stored vectors (float16, bfloat16) drift a little off it
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    rows = np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
    escalation = [is_escalation(t.question, t.tags) for t in turns]
    pairs = re_ask_pairs([t.question for t in turns], rows, threshold, skip=escalation)
    re_asked = {i for i, _ in pairs}
    re_asking = {j for _, j in pairs}
    outcomes = tuple(
        TurnOutcome(t.trace_id, re_asked=i in re_asked, escalation=escalation[i])
        for i, t in enumerate(turns)
    )
    last = len(turns) - 1
    negative = any(t.feedback is not None and t.feedback < 0 for t in turns)
    resolved = not re_asking and not any(escalation) and not negative
    return SessionOutcome(
        turns=outcomes,
        re_asks=len(re_asking),
        escalated=any(escalation),
        abandoned=turns[last].bad_answer or last in re_asking,
        negative_feedback=negative,
        resolved=resolved,
        turns_to_resolution=len(turns) if resolved else None,
    )
