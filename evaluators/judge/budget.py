"""Rolling judge budgets: calls per hour and USD per 24 h, reserved before each request.

The usage comes from the judgment store (every request is recorded there), so a budget
holds across processes sharing one store. Between its reservation and its record a request
is counted as pending, so concurrent checks see it; a reply's cost is known only after it
arrives, so requests already in flight may overshoot the USD budget (see `JudgeConfig`).
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Protocol

from evaluators.judge.errors import BudgetExceeded
from evaluators.judge.store import Usage, utcnow


class UsageLedger(Protocol):
    async def usage(self, since: datetime) -> Usage:
        """Calls and cost recorded at or after `since`."""
        ...


class Budget:
    """The budget checks of one event loop (its lock and pending count are bound to it)."""

    def __init__(
        self,
        ledger: UsageLedger,
        *,
        max_calls_per_hour: int | None,
        max_usd_per_day: float | None,
    ) -> None:
        self.ledger = ledger
        self.max_calls_per_hour = max_calls_per_hour
        self.max_usd_per_day = max_usd_per_day
        self.pending = 0
        self._lock = asyncio.Lock()

    @property
    def limited(self) -> bool:
        return self.max_calls_per_hour is not None or self.max_usd_per_day is not None

    async def reserve(self) -> None:
        """Count one more request; raises `BudgetExceeded` when a budget is used up."""
        if not self.limited:
            return
        async with self._lock:
            now = utcnow()
            if self.max_calls_per_hour is not None:
                used = await self.ledger.usage(now - timedelta(hours=1))
                if used.calls + self.pending >= self.max_calls_per_hour:
                    raise BudgetExceeded(
                        f"{self.max_calls_per_hour} judge calls per hour already used"
                    )
            if self.max_usd_per_day is not None:
                used = await self.ledger.usage(now - timedelta(days=1))
                if used.cost_usd >= self.max_usd_per_day:
                    raise BudgetExceeded(
                        f"judge spending reached {used.cost_usd:.4f} of "
                        f"{self.max_usd_per_day} USD in the last 24 h"
                    )
            # Counted until the request is recorded, so concurrent checks see it.
            self.pending += 1

    def release(self) -> None:
        """The reserved request is recorded now (the ledger counts it from here on)."""
        if self.limited:
            self.pending = max(0, self.pending - 1)
