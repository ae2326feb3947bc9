"""How a judge request reaches a model: litellm, imported lazily, and its errors made typed.

`Transport` is the seam the client talks to; `LiteLLMTransport` is the only real one. It
builds litellm's keyword arguments (litellm's own retries off: retries are the client's,
with typed errors and jitter), awaits `litellm.acompletion` under a hard timeout a little
longer than the one sent, prices a response, and maps litellm / asyncio / OS exceptions to
`JudgeError`s that say whether retrying can help (`map_exception`).

litellm is imported on first use with its price map read locally and telemetry off, so
importing this module (or building a client) touches no network.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from evaluators.judge.config import JudgeConfig
from evaluators.judge.errors import (
    JudgeConnectionError,
    JudgeError,
    JudgeRateLimited,
    JudgeRefusal,
    JudgeRequestError,
    JudgeServerError,
    JudgeTimeout,
)

HARD_TIMEOUT_MARGIN_S = 5.0
"""How much longer than the timeout sent to the server the client itself waits."""


class Transport(Protocol):
    """Sends one judge request and says what its failures mean."""

    async def send(
        self, model: str, messages: Sequence[Mapping[str, str]], fields: Mapping[str, Any]
    ) -> object:
        """The provider's response (OpenAI-shaped); `fields` ask for structured output."""
        ...

    def to_error(self, exc: BaseException) -> JudgeError:
        """`exc`, raised by `send`, as a typed judge error."""
        ...

    def price(self, response: object, model: str) -> float:
        """The USD cost of `response`; raises when the model has no known price."""
        ...

    def supports_response_schema(self, model: str) -> bool:
        """Whether the provider of `model` takes OpenAI's json_schema response format."""
        ...


def load_litellm() -> Any:
    """The litellm module, set up to make no network call of its own."""
    # No price-map download and no telemetry: the user configured no such network call.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    logging.getLogger("LiteLLM").setLevel(logging.WARNING)
    return litellm


class LiteLLMTransport:
    """`Transport` over `litellm.acompletion`, with the connection settings of a config."""

    def __init__(self, config: JudgeConfig) -> None:
        self.config = config

    def request(
        self, model: str, messages: Sequence[Mapping[str, str]], fields: Mapping[str, Any]
    ) -> dict[str, Any]:
        """litellm's keyword arguments for one request."""
        cfg = self.config
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "temperature": cfg.temperature,
            "timeout": cfg.timeout_s,
            "max_retries": 0,  # retries are the client's, with typed errors and jitter
            "num_retries": 0,
        }
        if cfg.api_base:
            kwargs["api_base"] = cfg.api_base
        if cfg.api_key:
            kwargs["api_key"] = cfg.api_key
        if cfg.max_tokens:
            kwargs["max_tokens"] = cfg.max_tokens
        return {**kwargs, **fields}

    async def send(
        self, model: str, messages: Sequence[Mapping[str, str]], fields: Mapping[str, Any]
    ) -> object:
        litellm = load_litellm()
        reply: object = await asyncio.wait_for(
            litellm.acompletion(**self.request(model, messages, fields)),
            self.config.timeout_s + HARD_TIMEOUT_MARGIN_S,
        )
        return reply

    def to_error(self, exc: BaseException) -> JudgeError:
        return map_exception(load_litellm(), exc)

    def price(self, response: object, model: str) -> float:
        return float(load_litellm().completion_cost(completion_response=response, model=model))

    def supports_response_schema(self, model: str) -> bool:
        return bool(load_litellm().supports_response_schema(model=model))


_CONNECT_ERRNOS = frozenset({errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH})


def connect_failure(exc: BaseException) -> str | None:
    """The OS-level reason when `exc` was caused by failing to connect (refused, no route,
    unknown host), found down its cause/context chain; None otherwise."""
    seen = 0
    cause: BaseException | None = exc
    while cause is not None and seen < 20:
        if isinstance(cause, socket.gaierror) or (
            isinstance(cause, OSError) and cause.errno in _CONNECT_ERRNOS
        ):
            return str(cause).splitlines()[0][:200] or type(cause).__name__
        cause = cause.__cause__ or cause.__context__
        seen += 1
    return None


def map_exception(litellm: Any, exc: BaseException) -> JudgeError:
    """litellm / asyncio exception -> typed, retriable-or-not judge error."""
    if isinstance(exc, JudgeError):
        return exc
    message = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
    if isinstance(exc, (TimeoutError, litellm.Timeout)):
        return JudgeTimeout(message)
    refused = connect_failure(exc)
    if refused is not None:
        # litellm reports a refused connection as an InternalServerError (status 500).
        return JudgeConnectionError(f"cannot connect: {refused}")
    if isinstance(exc, litellm.RateLimitError):
        return JudgeRateLimited(message)
    if isinstance(exc, litellm.ContentPolicyViolationError):
        return JudgeRefusal(message)
    server_errors = (
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
        litellm.BadGatewayError,
    )
    if isinstance(exc, server_errors):
        return JudgeServerError(message)
    if isinstance(exc, litellm.APIConnectionError):
        return JudgeConnectionError(message)
    status = getattr(exc, "status_code", None)
    if status == 429:
        return JudgeRateLimited(message)
    if isinstance(status, int) and status >= 500:
        return JudgeServerError(message)
    if isinstance(status, int) and status == 408:
        return JudgeTimeout(message)
    return JudgeRequestError(f"{type(exc).__name__}: {message}")
