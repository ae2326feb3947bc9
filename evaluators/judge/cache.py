"""Never pay twice for one judgment: the cache key, and sharing requests already in flight.

The key hashes model, prompt version, rendered input and temperature. The input is hashed
as rendered with fence marks, before the request's random fence code is sealed in, so the
code never defeats the cache. A stored successful answer under the key is the cache entry
(`store.py`), used when it still passes the prompt's schema and the metric's check;
identical requests in flight at the same moment share one call (`InFlight`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from evaluators.judge.errors import JudgeError
from evaluators.judge.parsing import validate
from evaluators.judge.reply import Check, finish
from evaluators.signature import text_hash

T = TypeVar("T")


def input_hash(template: Sequence[Any]) -> str:
    """The hash of a request's messages as rendered before sealing."""
    rendered = json.dumps(template, ensure_ascii=False, sort_keys=True)
    return text_hash(rendered, 32)


def cache_key(model: str, prompt_version: str, input_digest: str, temperature: float) -> str:
    """The key a judgment is stored and looked up under."""
    parts = [model, prompt_version, input_digest, repr(float(temperature))]
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()


class StoredAnswers(Protocol):
    async def get(self, cache_key: str) -> Mapping[str, Any] | None:
        """The parsed output of the latest successful call with this key, if any."""
        ...


async def stored_answer(
    store: StoredAnswers, key: str, schema: Mapping[str, Any], check: Check | None
) -> Any:
    """The answer stored under `key`, validated again (`schema`, then `check`); None when
    there is none or it no longer passes (then it is asked for again)."""
    cached = await store.get(key)
    if cached is None:
        return None
    try:
        return finish(validate(cached, schema), check)
    except JudgeError:
        return None


class InFlight:
    """Requests running now by cache key, bound to one event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._running: dict[str, asyncio.Future[Any]] = {}

    def follow(self, key: str) -> Awaitable[Any] | None:
        """The answer of the request running under `key`, or None when none is.

        Cancelling a follower leaves the request itself running."""
        running = self._running.get(key)
        return asyncio.shield(running) if running is not None else None

    async def lead(self, key: str, request: Callable[[], Awaitable[T]]) -> T:
        """Run `request` as the one call under `key` that followers share."""
        future: asyncio.Future[Any] = self._loop.create_future()
        self._running[key] = future
        try:
            data = await request()
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: nobody else may be waiting
            raise
        else:
            future.set_result(data)
            return data
        finally:
            self._running.pop(key, None)
