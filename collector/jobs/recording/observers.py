"""Who is told of each evaluated trace's outcomes, after they are committed.

The jobs store per-trace outcomes and aggregate windows; some consumers want the
per-trace outcomes themselves as they are made (the score histograms with exemplars on
`/metrics`, the OpenTelemetry evaluation events). They implement `OutcomeObserver` and
are handed to the jobs in `JobEnvironment.observers`. An observer must be quick and must
not block (queue and return); one that raises is logged and counted, the job goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from evaluators.outcome import Outcome

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Evaluated:
    """One trace version's outcomes, as a job has just stored them."""

    job: str
    trace_id: str
    timestamp: float
    """The trace's own time, epoch seconds."""
    groups: Mapping[str, str]
    """The trace's group-label values (cleaned; before folding)."""
    outcomes: Mapping[str, Outcome]
    """metric -> Score | Skipped | Failed."""


class OutcomeObserver(Protocol):
    def observe(self, evaluated: Sequence[Evaluated]) -> None:
        """Take one run's newly stored outcomes (called after the commit)."""


def notify(observers: Sequence[OutcomeObserver], evaluated: Sequence[Evaluated]) -> int:
    """Hand `evaluated` to every observer; an observer's error is logged, not raised.
    Returns how many observers failed."""
    failed = 0
    if not evaluated:
        return failed
    for observer in observers:
        try:
            observer.observe(evaluated)
        except Exception:
            failed += 1
            logger.exception("outcome observer %r failed; the job goes on", observer)
    return failed
