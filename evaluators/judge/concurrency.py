"""Adaptive concurrency per judge model: additive increase, multiplicative decrease (AIMD).

A self-hosted server serves a few requests at a time (llama.cpp: one per slot) and queues
the rest; requests waiting in its queue run into their timeouts and are retried, so a
fixed concurrency above what the server serves turns queueing into errors. `AdaptiveLimit`
is a semaphore whose size moves:

- it starts at the configured concurrency, which is also its ceiling (a budget a user set
  for a paid API is never exceeded);
- an overload signal (timeout, 429, 5xx, dropped connection, or a reply that took more
  than `slow_fraction` of the timeout) halves it, once per round: requests sent before the
  last decrease were sent under the old limit and do not decrease it again;
- a success adds 1/limit (about +1 per limit's worth of successes) while the limit is in
  use, so it grows back once the server keeps up.

Only the time after `acquire` counts against a request's timeout; waiting here does not.
"""

from __future__ import annotations

import asyncio
import collections
import math


class AdaptiveLimit:
    """An asyncio semaphore of moving size, bound to the running event loop."""

    def __init__(
        self,
        initial: int,
        *,
        minimum: int = 1,
        adaptive: bool = True,
        decrease: float = 0.5,
    ) -> None:
        if initial < 1 or minimum < 1:
            raise ValueError("concurrency limits must be >= 1")
        self.maximum = initial
        self.minimum = min(minimum, initial)
        self.adaptive = adaptive
        self.decrease_factor = decrease
        self._limit = float(initial)
        self.in_flight = 0
        self._round = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self.decreases = 0

    @property
    def limit(self) -> int:
        """The number of requests allowed in flight now."""
        return max(self.minimum, math.floor(self._limit))

    async def acquire(self) -> int:
        """Wait for a free slot; returns a token to hand back to `release`."""
        while self.in_flight >= self.limit:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake()  # pass on a wake-up this task can no longer use
                raise
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
        self.in_flight += 1
        return self._round

    def release(self, token: int, outcome: str) -> None:
        """Free the slot; `outcome` is "ok", "overload" or "other" (no signal)."""
        used = self.in_flight >= self.limit
        self.in_flight = max(0, self.in_flight - 1)
        if self.adaptive:
            if outcome == "overload":
                if token >= self._round and self._limit > self.minimum:
                    self._limit = max(float(self.minimum), self._limit * self.decrease_factor)
                    self._round += 1
                    self.decreases += 1
            elif outcome == "ok" and used and self._limit < self.maximum:
                self._limit = min(float(self.maximum), self._limit + 1.0 / self._limit)
        self._wake()

    def reset_loop(self) -> None:
        """Forget slots and waiters of an event loop that has finished (the limit stays)."""
        self.in_flight = 0
        self._waiters.clear()

    def _wake(self) -> None:
        free = self.limit - self.in_flight
        for waiter in list(self._waiters):
            if free <= 0:
                break
            if not waiter.done():
                waiter.set_result(None)
                free -= 1
