"""A metric's aggregate over a window in one group: what every job's run produces."""

from __future__ import annotations

from dataclasses import dataclass

from collector.jobs.windows.window import Group
from evaluators.aggregate import Aggregate


@dataclass(frozen=True, slots=True)
class WindowAggregate:
    group: Group
    aggregate: Aggregate
