"""Requests-per-minute pacing: send times spaced evenly, never in a burst.

Each request takes the next free slot, `60 / requests_per_minute` seconds after the one
before, and sleeps until it; without a rate nothing waits. The clock and the sleep are
parameters so the spacing can be checked without waiting for it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

Clock = Callable[[], float]
"""Monotonic seconds."""
Sleep = Callable[[float], Awaitable[None]]


class Pacer:
    """Spaces the requests of one event loop `60 / per_minute` seconds apart."""

    def __init__(
        self,
        per_minute: int | None,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.interval = 60.0 / per_minute if per_minute else 0.0
        self.next_slot = 0.0
        self._clock = clock
        self._sleep = sleep

    async def pace(self) -> None:
        """Wait for this request's slot."""
        if not self.interval:
            return
        now = self._clock()
        slot = max(now, self.next_slot)
        self.next_slot = slot + self.interval
        if slot > now:
            await self._sleep(slot - now)
