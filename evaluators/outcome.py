"""What one metric says about one sample: a score, a skip with a reason, or an error.

Never NaN: an undefined value is `Skipped` (e.g. no reference) and a failure is `Failed`
with the error's type, so aggregates can count them and dashboards can show them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Score:
    value: float


@dataclass(frozen=True, slots=True)
class Skipped:
    reason: str


@dataclass(frozen=True, slots=True)
class Failed:
    error_type: str
    message: str = ""


Outcome = Score | Skipped | Failed
