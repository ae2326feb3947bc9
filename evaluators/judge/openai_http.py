"""A judge request straight to an OpenAI-compatible server: one aiohttp session per loop.

For an `openai/<model>` at a configured `api_base` (vLLM, llama.cpp, SGLang, LM Studio, a
proxy) litellm adds nothing to the request but its own per-call work: the OpenAI SDK's
request building, logging objects and price lookups cost ~4 ms of CPU per call on the
2-core test machine, which at 32 requests in flight is most of a core, where the JSON body
posted here costs ~0.3 ms (benchmarks/RESULTS.md, "Hot paths (issue 21)"). The request is
the one litellm sends (`/chat/completions` with the same fields; `extra_body` merged into
the body), the reply is read into attribute objects shaped like litellm's, and HTTP
statuses and network failures map to the same typed errors as litellm's exceptions
(`transport.map_exception`): 429 rate limited, 408 and 504 timeouts, other 5xx server
errors, a 400 naming a content policy violation a refusal, any other status a request
error. Prices and schema support still come from litellm's model map.

Each running event loop gets its own session (keep-alive connections, no limit of its own:
the client's adaptive limit bounds the requests in flight), so jobs running the same client
on their own loops in scheduler threads never share one; it is closed, and forgotten, when
that loop's tasks are cancelled at its end (`asyncio.run` does so), by a task that only
waits for that moment.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import orjson

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
from evaluators.judge.transport import (
    HARD_TIMEOUT_MARGIN_S,
    connect_failure,
    load_litellm,
)

LITELLM_ONLY_FIELDS = frozenset({"_skip_mcp_handler"})
"""Request fields meant for litellm itself, never sent."""


class HttpStatusError(Exception):
    """The server answered with an error status; `status_code` as litellm's errors have."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(f"HTTP {status_code}: {message}")
        self.status_code = status_code
        self.message = message


class InvalidResponseError(Exception):
    """A success status whose body is not an OpenAI chat completion."""


def model_name(model: str) -> str:
    """The name the server knows: the litellm provider prefix removed ("openai/x" -> "x")."""
    _provider, sep, rest = model.partition("/")
    return rest if sep else model


def request_body(
    config: JudgeConfig,
    model: str,
    messages: Sequence[Mapping[str, str]],
    fields: Mapping[str, Any],
) -> dict[str, Any]:
    """The JSON body of one chat completion request (what litellm would post)."""
    body: dict[str, Any] = {
        "model": model_name(model),
        "messages": list(messages),
        "temperature": config.temperature,
    }
    if config.max_tokens:
        body["max_tokens"] = config.max_tokens
    for key, value in fields.items():
        if key == "extra_body":
            body.update(value)
        elif key not in LITELLM_ONLY_FIELDS:
            body[key] = value
    return body


def as_attributes(value: Any) -> Any:
    """Decoded JSON with objects as attribute namespaces (how the client reads a litellm
    response); tool calls stay dicts, which `structured.tool_arguments` also reads."""
    if isinstance(value, dict):
        return SimpleNamespace(
            **{k: v if k == "tool_calls" else as_attributes(v) for k, v in value.items()}
        )
    if isinstance(value, list):
        return [as_attributes(v) for v in value]
    return value


def error_message(body: bytes) -> str:
    """The server's error message (OpenAI's `{"error": {"message": ...}}`), else its text."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body.decode("utf-8", "replace").strip()[:1000]
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])[:1000]
    if isinstance(error, str):
        return error[:1000]
    return body.decode("utf-8", "replace").strip()[:1000]


class OpenAIHttpTransport:
    """`Transport` posting to `{api_base}/chat/completions` with aiohttp."""

    def __init__(self, config: JudgeConfig) -> None:
        if not config.api_base:
            raise ValueError("the http judge transport needs an api_base")
        self.config = config
        self.url = config.api_base.rstrip("/") + "/chat/completions"
        key = config.api_key or os.environ.get("OPENAI_API_KEY")
        self.headers = {"Content-Type": "application/json"}
        if key:
            self.headers["Authorization"] = f"Bearer {key}"
        self._sessions: dict[asyncio.AbstractEventLoop, Any] = {}

    async def send(
        self, model: str, messages: Sequence[Mapping[str, str]], fields: Mapping[str, Any]
    ) -> object:
        body = orjson.dumps(request_body(self.config, model, messages, fields))
        reply: object = await asyncio.wait_for(
            self._post(body), self.config.timeout_s + HARD_TIMEOUT_MARGIN_S
        )
        return reply

    async def _post(self, body: bytes) -> object:
        session = self._session_of_loop()
        async with session.post(self.url, data=body, headers=self.headers) as response:
            payload = await response.read()
            status = response.status
        if status >= 400:
            raise HttpStatusError(status, error_message(payload))
        try:
            data = orjson.loads(payload)
        except orjson.JSONDecodeError as exc:
            raise InvalidResponseError(f"the reply is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise InvalidResponseError("the reply is not a JSON object")
        return as_attributes(data)

    def _session_of_loop(self) -> Any:
        loop = asyncio.get_running_loop()
        session = self._sessions.get(loop)
        if session is None:
            import aiohttp

            timeout = aiohttp.ClientTimeout(
                total=None, sock_connect=self.config.timeout_s, sock_read=self.config.timeout_s
            )
            session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0),
                timeout=timeout,
                trust_env=True,  # HTTP(S)_PROXY, as litellm's own aiohttp transport
            )
            self._sessions[loop] = session
            _close_at_loop_end(loop, session, lambda: self._sessions.pop(loop, None))
        return session

    def to_error(self, exc: BaseException) -> JudgeError:
        return map_http_exception(exc)

    def price(self, response: object, model: str) -> float:
        usage = getattr(response, "usage", None)
        prompt_cost, completion_cost = load_litellm().cost_per_token(
            model=model,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        )
        return float(prompt_cost) + float(completion_cost)

    def supports_response_schema(self, model: str) -> bool:
        return bool(load_litellm().supports_response_schema(model=model))


_KEEPERS: set[asyncio.Task[None]] = set()


def _close_at_loop_end(
    loop: asyncio.AbstractEventLoop, session: Any, forget: Callable[[], object]
) -> None:
    """Close `session` when the loop cancels its remaining tasks (the end of `asyncio.run`),
    then call `forget`."""

    async def keeper() -> None:
        try:
            await loop.create_future()  # never set: only cancellation ends the wait
        finally:
            forget()
            await session.close()

    task = loop.create_task(keeper())
    _KEEPERS.add(task)
    task.add_done_callback(_KEEPERS.discard)


def map_http_exception(exc: BaseException) -> JudgeError:
    """A failure of `OpenAIHttpTransport.send` as the typed judge error litellm's
    exception for it maps to (`transport.map_exception`)."""
    if isinstance(exc, JudgeError):
        return exc
    message = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
    if isinstance(exc, HttpStatusError):
        status = exc.status_code
        if status == 429:
            return JudgeRateLimited(message)
        if status in (408, 504):
            return JudgeTimeout(message)
        if status >= 500:
            return JudgeServerError(message)
        text = exc.message.lower()
        if status == 400 and ("content_policy" in text or "content policy" in text):
            return JudgeRefusal(message)
        return JudgeRequestError(f"{type(exc).__name__}: {message}")
    if isinstance(exc, TimeoutError):  # aiohttp's read/connect timeouts are TimeoutErrors
        return JudgeTimeout(message)
    refused = connect_failure(exc)
    if refused is not None:
        return JudgeConnectionError(f"cannot connect: {refused}")
    if isinstance(exc, InvalidResponseError):
        return JudgeServerError(message)
    import aiohttp

    if isinstance(exc, aiohttp.ClientError | OSError):
        return JudgeConnectionError(message)
    return JudgeRequestError(f"{type(exc).__name__}: {message}")
