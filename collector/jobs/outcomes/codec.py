"""The stored form of a trace's outcomes (`job_outcomes.outcomes`), written and read here only.

One metric's outcome is stored as:

- a score: its value, a JSON number;
- a skip: `{"skipped": reason}`;
- an error: `{"error": type}`, with `"attempts": n` when the judge was tried n > 1 times;
- a transient judge failure waiting for a retry (`retry.py`):
  `{"error": type, "transient": true, "attempts": n}`. It is not measured yet: it counts
  nowhere (neither as an error nor in a window's `n`), like a metric not run.

`kind_of` says how a stored outcome counts; every reader (the outcome columns, the bucket
sums, the SLO events, the retry cursor) goes through it, so they agree on what waits.
The JSON text of the `groups` and `outcomes` columns is read and written with orjson.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from evaluators.outcome import Failed, Outcome, Score, Skipped

SCORED = "scored"
SKIPPED = "skipped"
ERROR = "error"
TRANSIENT = "transient"
ATTEMPTS = "attempts"
UNKNOWN_ERROR = "unknown"
"""The error type of a stored error that does not name one."""
MARKER_PATTERN = f'%"{TRANSIENT}"%'
"""SQL LIKE pattern finding rows with a waiting outcome in `job_outcomes.outcomes` read as
text (both PostgreSQL's jsonb and SQLite's JSON text spell the key this way)."""

_SCORED_KIND = (SCORED, "")


def encode(outcome: Outcome) -> Any:
    """The stored form of one outcome."""
    if isinstance(outcome, Score):
        return float(outcome.value)
    if isinstance(outcome, Skipped):
        return {SKIPPED: outcome.reason}
    return {ERROR: outcome.error_type}


def encode_waiting(error_type: str, attempts: int) -> dict[str, Any]:
    """The stored form of a transient failure that waits for a retry, the `attempts`-th."""
    return {ERROR: error_type, TRANSIENT: True, ATTEMPTS: attempts}


def with_attempts(stored: Mapping[str, Any], attempts: int) -> dict[str, Any]:
    """A stored error with the number of times it was tried."""
    return {**stored, ATTEMPTS: attempts}


def is_waiting(stored: Any) -> bool:
    """True when a stored outcome is a transient failure waiting for a retry."""
    return isinstance(stored, dict) and stored.get(TRANSIENT) is True


def attempts_of(stored: Mapping[str, Any]) -> int:
    """How many times a stored failure was tried (1 when it does not say)."""
    return int(stored.get(ATTEMPTS, 1))


def kind_of(stored: Any) -> tuple[str, str] | None:
    """How a stored outcome counts: `(SCORED, "")`, `(SKIPPED, reason)` or
    `(ERROR, error type)`; None for one waiting for a retry (not measured yet)."""
    if not isinstance(stored, dict):
        return _SCORED_KIND
    if SKIPPED in stored:
        return SKIPPED, str(stored[SKIPPED])
    if stored.get(TRANSIENT) is True:
        return None
    return ERROR, str(stored.get(ERROR, UNKNOWN_ERROR))


def decode(stored: Any) -> Outcome | None:
    """The outcome a stored one is; None for one waiting for a retry (not final yet)."""
    kind = kind_of(stored)
    if kind is None:
        return None
    if kind[0] == SCORED:
        return Score(float(stored))
    if kind[0] == SKIPPED:
        return Skipped(kind[1])
    return Failed(kind[1])


def read_outcomes(text: str | bytes | None) -> dict[str, Any]:
    """The stored outcomes per metric from the column's JSON text (none: empty)."""
    found: dict[str, Any] = orjson.loads(text) if text else {}
    return found


def read_groups(text: str | bytes | None) -> dict[str, Any] | None:
    """The stored group values from the column's JSON text (None: none stored)."""
    found: dict[str, Any] | None = orjson.loads(text) if text else None
    return found


def write_json(value: Any) -> bytes:
    """The JSON text of a stored column (`groups`, `outcomes`, `slices`)."""
    return orjson.dumps(value)
