"""Transient judge failures: a trace waits for a later run instead of keeping the error.

A judge call that timed out, was rate limited (429), got a 5xx or lost its connection
says nothing about the trace; recorded as an error, the trace would be passed over for
good. So a trace whose outcome(s) failed with a transient error type
(`evaluators.judge.errors.TRANSIENT_ERROR_TYPES`) is stored with those outcomes marked
`{"error": type, "transient": true, "attempts": n}` and is evaluated again by the next
runs, up to `retries` of them; the failure after the last retry is stored as a final error
(`{"error": type, "attempts": n}`). Final error types (schema after repair, refusal, bad
request; an exhausted budget is a skip) are stored as errors at once.

The marker lives in `job_outcomes` (no schema change), so the attempt counts survive a
restart and every replica reads the same ones. While a trace waits, its transient outcomes
count nowhere (neither as errors nor in `n` of the windows: they are not measured yet);
its other outcomes count as usual. Retrying re-scores the whole trace: the metrics that
succeeded are answered from the judge's cache (the `judgments` table), not paid again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from collector.jobs.outcomes.codec import (
    attempts_of,
    encode,
    encode_waiting,
    is_waiting,
    with_attempts,
)
from evaluators.judge.errors import is_transient
from evaluators.outcome import Failed, Outcome


class Waiting(NamedTuple):
    """A trace version waiting for a retry: its failed attempts and the metrics that wait."""

    version: float
    attempts: int
    metrics: frozenset[str]


def waiting_of(version: float, outcomes: Mapping[str, Any]) -> Waiting | None:
    """What of a stored trace's outcomes (`outcome_codec` form) waits (None: nothing)."""
    metrics = {m: v for m, v in outcomes.items() if is_waiting(v)}
    if not metrics:
        return None
    attempts = max(attempts_of(v) for v in metrics.values())
    return Waiting(version, attempts, frozenset(metrics))


@dataclass(frozen=True, slots=True)
class TraceOutcomes:
    """One trace's outcomes sorted for storing: `stored` is the JSON for `job_outcomes`,
    `counted` what the windows and observers see (without the waiting ones), `waiting`
    the metrics that wait for a retry and `attempts` the transient failures so far."""

    stored: dict[str, Any]
    counted: dict[str, Outcome]
    waiting: frozenset[str] = frozenset()
    attempts: int = 0


@dataclass
class RetryPolicy:
    """How many later runs retry a trace whose judge calls failed transiently."""

    retries: int = 0
    scheduled: dict[str, int] = field(default_factory=dict)
    """Retries scheduled per metric since the last `take_scheduled` (for the exporter)."""

    def sort(self, outcomes: Mapping[str, Outcome], attempts_before: int) -> TraceOutcomes:
        """Sort one trace's fresh outcomes, `attempts_before` transient failures of this
        trace version having come before."""
        if not any(isinstance(o, Failed) for o in outcomes.values()):  # nothing to retry
            return TraceOutcomes({m: encode(o) for m, o in outcomes.items()}, dict(outcomes))
        transient = {
            m: o
            for m, o in outcomes.items()
            if isinstance(o, Failed) and is_transient(o.error_type)
        }
        attempts = attempts_before + 1 if transient else 0
        stored: dict[str, Any] = {m: encode(o) for m, o in outcomes.items()}
        if transient and attempts <= self.retries:
            for m, failed in transient.items():
                stored[m] = encode_waiting(failed.error_type, attempts)
                self.scheduled[m] = self.scheduled.get(m, 0) + 1
            counted = {m: o for m, o in outcomes.items() if m not in transient}
            return TraceOutcomes(stored, counted, frozenset(transient), attempts)
        if transient and attempts > 1:
            for m in transient:
                stored[m] = with_attempts(stored[m], attempts)
        return TraceOutcomes(stored, dict(outcomes))

    def take_scheduled(self) -> dict[str, int]:
        """The retries scheduled since the last call, per metric (then reset)."""
        taken, self.scheduled = self.scheduled, {}
        return taken
