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
- a success whose latency shows queueing is an overload signal too (below);
- any other success adds 1/limit (about +1 per limit's worth of successes) while the limit
  is in use, so it grows back once the server keeps up.

Queueing (latency) signal, after Netflix's concurrency-limits Vegas/gradient limiters: a
server that queues instead of timing out (llama.cpp with a long timeout) never sends the
signals above, so the limit would stay at its ceiling with every extra request only
waiting. The no-queue baseline is the minimum latency of the last `BASELINE_WINDOW`
successes: a window, not an all-time minimum, so a lasting change (another server, longer
replies) moves it within that many requests. Judge replies vary in length, and a reply's
latency is a fixed part (the prompt) plus a part per completion token, so neither raw nor
per-token latency alone tells queueing from length: a long reply is slow in seconds, a
short one slow per token. A success counts as overload (once per round, like a timeout)
only when both its latency and, when the server reports completion tokens, its latency
per completion token exceed `QUEUEING_FACTOR` times their baselines; time spent in a queue
inflates both. Nothing is judged before
`MIN_SAMPLES` latencies are known.

Only the time after `acquire` counts against a request's timeout; waiting here does not.
"""

from __future__ import annotations

import asyncio
import collections
import math

QUEUEING_FACTOR = 2.0
"""A reply more than this many times the baseline waited in a queue: with one slot, k
requests in flight take about k times one request's latency, so 2 still allows one waiting
request (which hides the client's own gap between requests) and flags anything beyond."""
BASELINE_WINDOW = 50
"""Successes the baselines (their minimum latency, and per token) are taken over."""
MIN_SAMPLES = 3
"""Latencies needed before the queueing signal is used."""


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
        self._latencies: collections.deque[float] = collections.deque(maxlen=BASELINE_WINDOW)
        self._per_token: collections.deque[float] = collections.deque(maxlen=BASELINE_WINDOW)

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

    def release(
        self,
        token: int,
        outcome: str,
        latency_s: float | None = None,
        completion_tokens: int | None = None,
    ) -> None:
        """Free the slot; `outcome` is "ok", "overload" or "other" (no signal).

        An "ok" with its `latency_s` (and `completion_tokens`, when known) may turn into
        "overload" when the latency shows the request waited in the server's queue."""
        used = self.in_flight >= self.limit
        self.in_flight = max(0, self.in_flight - 1)
        if self.adaptive:
            if (
                outcome == "ok"
                and latency_s is not None
                and self._queued(latency_s, completion_tokens)
            ):
                outcome = "overload"
            if outcome == "overload":
                if token >= self._round and self._limit > self.minimum:
                    self._limit = max(float(self.minimum), self._limit * self.decrease_factor)
                    self._round += 1
                    self.decreases += 1
            elif outcome == "ok" and used and self._limit < self.maximum:
                self._limit = min(float(self.maximum), self._limit + 1.0 / self._limit)
        self._wake()

    @property
    def baseline(self) -> float | None:
        """The no-queue latency in seconds (minimum over the window), or None."""
        return min(self._latencies) if self._latencies else None

    def _queued(self, latency_s: float, completion_tokens: int | None) -> bool:
        queued = len(self._latencies) >= MIN_SAMPLES - 1 and latency_s > QUEUEING_FACTOR * min(
            self._latencies
        )
        self._latencies.append(latency_s)
        if completion_tokens:
            per_token = latency_s / completion_tokens
            if self._per_token:
                queued = queued and per_token > QUEUEING_FACTOR * min(self._per_token)
            self._per_token.append(per_token)
        return queued

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


class ModelLimits:
    """One `AdaptiveLimit` per judge model, made on first use."""

    def __init__(self, initial: int, *, adaptive: bool = True) -> None:
        self.initial = initial
        self.adaptive = adaptive
        self._limits: dict[str, AdaptiveLimit] = {}

    def of(self, model: str) -> AdaptiveLimit:
        """The limit of `model`."""
        limit = self._limits.get(model)
        if limit is None:
            limit = AdaptiveLimit(self.initial, adaptive=self.adaptive)
            self._limits[model] = limit
        return limit

    def reset_loop(self) -> None:
        """Forget the slots and waiters of a finished event loop (every model's limit stays)."""
        for limit in self._limits.values():
            limit.reset_loop()
