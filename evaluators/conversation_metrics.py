"""The conversation outcomes the `sessions` job stores (issue 42), declared with their facts.

They are computed by the job from closed sessions (`evaluators.conversations` detects
re-asks, escalations and abandonment), not from samples through `compute`, so they are
`JobMetric`s: the drift rules, dashboards and docs read their direction and unit here.
Session metrics count once per closed session, at its first turn's time; turn metrics once
per turn, at the turn's time. The judged session metrics (completeness, frustration) count
once per judged session (a sample of the closed ones, with a judge configured).
"""

from __future__ import annotations

from evaluators.registry import JobMetric, declare

SESSION_RESOLVED = "session_resolved"
SESSION_RE_ASKED = "session_re_asked"
SESSION_ESCALATED = "session_escalated"
SESSION_ABANDONED = "session_abandoned"
TURNS_TO_RESOLUTION = "turns_to_resolution"
TURN_RE_ASKED = "turn_re_asked"
TURN_ESCALATION = "turn_escalation"
SESSION_COMPLETENESS = "session_completeness"
SESSION_FRUSTRATION = "session_frustration"

SESSION_METRICS = (
    SESSION_RESOLVED,
    SESSION_RE_ASKED,
    SESSION_ESCALATED,
    SESSION_ABANDONED,
    TURNS_TO_RESOLUTION,
)
TURN_METRICS = (TURN_RE_ASKED, TURN_ESCALATION)
JUDGED_SESSION_METRICS = (SESSION_COMPLETENESS, SESSION_FRUSTRATION)
"""The judged outcome of a sampled closed session (LLM judge), on the session's first turn
like the session metrics; means (Student's t), not shares."""
PROPORTIONS = frozenset(
    (
        SESSION_RESOLVED,
        SESSION_RE_ASKED,
        SESSION_ESCALATED,
        SESSION_ABANDONED,
        TURN_RE_ASKED,
        TURN_ESCALATION,
    )
)
"""The shares (Wilson intervals); `turns_to_resolution` is a mean (Student's t)."""

declare(
    JobMetric(
        SESSION_RESOLVED,
        "Share of closed conversations resolved: no re-ask, no escalation to a person and "
        "no negative feedback in the session.",
        direction="higher",
        unit="ratio",
        per_trace=True,
    )
)
declare(
    JobMetric(
        SESSION_RE_ASKED,
        "Share of closed conversations in which the user asked an earlier question of the "
        "session again in other words (a paraphrase, by the embedding model's calibrated "
        "threshold). Detection measured at precision 0.6-0.7, recall 0.65-0.7 on labelled "
        "RU/EN help-desk conversations (benchmarks/RESULTS.md): read its trend more than its "
        "level.",
        direction="lower",
        unit="ratio",
        per_trace=True,
    )
)
declare(
    JobMetric(
        SESSION_ESCALATED,
        "Share of closed conversations in which the user asked for a person (operator, "
        "human, оператор) or the application tagged a turn `escalated`.",
        direction="lower",
        unit="ratio",
        per_trace=True,
    )
)
declare(
    JobMetric(
        SESSION_ABANDONED,
        "Share of closed conversations that ended right after a badly scored answer "
        "(judge, empty retrieval) or after a re-ask.",
        direction="lower",
        unit="ratio",
        per_trace=True,
    )
)
declare(
    JobMetric(
        TURNS_TO_RESOLUTION,
        "Mean number of turns of the resolved conversations (the unresolved are skipped).",
        direction="lower",
        unit="count",
        per_trace=True,
    )
)
declare(
    JobMetric(
        TURN_RE_ASKED,
        "Share of answers followed by a re-ask: a later question of the same session that "
        "paraphrases this turn's question (the answer did not help). Detection measured at "
        "precision 0.6-0.7, recall 0.65-0.7 on labelled RU/EN help-desk conversations "
        "(benchmarks/RESULTS.md): read its trend more than its level.",
        direction="lower",
        unit="ratio",
        per_trace=True,
    )
)
declare(
    JobMetric(
        TURN_ESCALATION,
        "Share of turns asking for a person or tagged `escalated` by the application.",
        direction="lower",
        unit="ratio",
        per_trace=True,
    )
)
declare(
    JobMetric(
        SESSION_COMPLETENESS,
        "LLM judge: mean share of the user's intentions a sampled closed conversation "
        "satisfied (the judge lists what the user came for and a verdict for each).",
        direction="higher",
        unit="ratio",
        per_trace=True,
        uses_judge=True,
    )
)
declare(
    JobMetric(
        SESSION_FRUSTRATION,
        "LLM judge: mean 0-1 rating of how frustrated the user became with the assistant "
        "in a sampled closed conversation (0 none, 0.5 repeated or complained, 1 strong).",
        direction="lower",
        unit="ratio",
        per_trace=True,
        uses_judge=True,
    )
)
