"""When `ragpulse ingest --until-idle` may stop.

"Idle" means no message for `idle_s` seconds while holding the same partitions. A change of
assignment restarts the clock: while a group re-forms (another worker joining or leaving)
no consumer receives anything, and stopping then would leave partitions undrained. A
failed batch restarts it too, so a database backoff is not mistaken for a quiet topic. A
consumer holding no partition at all (more consumers than partitions, or topics that do
not exist) stops once it has held none for `unassigned_s`.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any


class IdleClock:
    """Tracks the last message and the assignment; `stop_reason` says when to stop."""

    def __init__(self, idle_s: float, unassigned_s: float, now: float) -> None:
        self.idle_s = idle_s
        self.unassigned_s = unassigned_s
        self._assignment: frozenset[Any] = frozenset()
        self._since = now
        self._unassigned_since = now

    def activity(self, now: float) -> None:
        """A message arrived, or a batch failed and will be retried."""
        self._since = now

    def stop_reason(self, assignment: Collection[Any], now: float) -> str | None:
        """Why to stop now (for the log), or None to keep consuming."""
        current = frozenset(assignment)
        if current != self._assignment:
            self._assignment = current
            self._since = now
            if not current:
                self._unassigned_since = now
        if current:
            if now - self._since >= self.idle_s:
                return f"no message for {self.idle_s:g}s"
            return None
        if now - self._unassigned_since >= self.unassigned_s:
            return f"no partition assigned for {self.unassigned_s:g}s"
        return None
