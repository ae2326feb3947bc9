"""Which failed judge requests are tried again, and how long to wait before each retry.

Only errors marked `retriable` (timeouts, 429, 5xx, connection errors: `errors.py`) are
retried, at most `max_retries` times; anything else fails at once. The waits grow
exponentially and are drawn with full jitter (uniform between 0 and the cap), so clients
that failed together do not come back together.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass

from evaluators.judge.config import JudgeConfig
from evaluators.judge.errors import JudgeError


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int
    backoff_base_s: float
    backoff_max_s: float

    @classmethod
    def from_config(cls, config: JudgeConfig) -> RetryPolicy:
        return cls(config.max_retries, config.backoff_base_s, config.backoff_max_s)

    def gives_up(self, error: JudgeError, retries: int) -> bool:
        """Whether `error`, after `retries` retries so far, is final."""
        return not error.retriable or retries >= self.max_retries

    def backoff_cap(self, retry: int) -> float:
        """The longest wait before retry number `retry` (1 for the first)."""
        cap: float = min(self.backoff_max_s, self.backoff_base_s * 2 ** (retry - 1))
        return cap

    async def wait(self, retry: int) -> None:
        """Sleep before retry number `retry`, with full jitter."""
        await asyncio.sleep(random.uniform(0, self.backoff_cap(retry)))


def note_attempts(error: JudgeError, retries: int) -> None:
    """Say in a final retriable error's message how many attempts it took."""
    if error.retriable and retries:
        error.args = (f"{error} (after {retries + 1} attempts)",)
