"""A judge's reply: read out of the provider's response, then turned into checked data.

`read_reply` takes the OpenAI-shaped response litellm returns and keeps what the client
records (text, tokens, cost, latency); an unusable one (no choices, a refusal, a content
filter stop, no text) raises its typed error with the reply attached (`reply_of`), so the
failed request is still recorded with its tokens and cost. `parse_reply` finds and
validates the JSON (`parsing.py`), closing a reply cut at the token limit when a check
can tell it is complete.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evaluators.judge import structured
from evaluators.judge.errors import (
    JudgeEmptyResponse,
    JudgeError,
    JudgeInvalidOutput,
    JudgeRefusal,
    JudgeSchemaError,
    JudgeTruncated,
)
from evaluators.judge.parsing import close_truncated, extract_json, looks_like_refusal, validate
from evaluators.judge.prompts.base import Prompt

Check = Callable[[Any], Any]
"""Extra validation of parsed data (e.g. one verdict per statement); raises JudgeError."""


@dataclass
class Reply:
    """What one answered request returned and cost."""

    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float
    latency_ms: float
    truncated: bool = False


def with_reply(exc: JudgeError, reply: Reply) -> JudgeError:
    """`exc`, carrying the reply it is about (for the record of the failed request)."""
    exc.reply = reply  # type: ignore[attr-defined]
    return exc


def reply_of(exc: BaseException) -> Reply | None:
    """The reply a failed request got, if the server answered at all."""
    reply = getattr(exc, "reply", None)
    return reply if isinstance(reply, Reply) else None


def token_usage(response: object) -> tuple[int | None, int | None]:
    """(prompt tokens, completion tokens) the server reported, each None when it did not."""
    usage = getattr(response, "usage", None)
    return getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None)


def read_reply(
    response: object,
    *,
    prompt_tokens: int | None,
    completion_tokens: int | None,
    cost_usd: float,
    latency_ms: float,
) -> Reply:
    """The reply in `response`; raises a typed error (with the reply) when it is unusable."""
    choices: Sequence[Any] = getattr(response, "choices", None) or []
    reply = Reply(
        text="",
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cost_usd=cost_usd,
        latency_ms=latency_ms,
    )
    if not choices:
        raise with_reply(JudgeEmptyResponse("the reply has no choices"), reply)
    choice = choices[0]
    message = getattr(choice, "message", None)
    # In tools mode the answer is the forced call's arguments (some servers still
    # put it in the content).
    text = structured.tool_arguments(message) or getattr(message, "content", None) or ""
    reply.text = text
    refusal = getattr(message, "refusal", None) or (
        (getattr(message, "provider_specific_fields", None) or {}).get("refusal")
    )
    finish = getattr(choice, "finish_reason", None)
    if refusal:
        raise with_reply(JudgeRefusal(f"the judge refused: {str(refusal)[:120]!r}"), reply)
    if finish == "content_filter":
        raise with_reply(JudgeRefusal("the provider's content filter stopped it"), reply)
    reply.truncated = finish == "length"
    if not text.strip():
        raise with_reply(JudgeEmptyResponse("the reply has no text"), reply)
    return reply


def parse_reply(prompt: Prompt, reply: Reply, check: Check | None) -> tuple[Any, Any]:
    """(schema-valid JSON to cache, value after `check`).

    A reply cut at the token limit is closed (open strings, arrays and objects) and
    kept only when a `check` then accepts it (e.g. every verdict present); a reply
    without such a check would lose items silently, so it raises `JudgeTruncated`.
    """
    if reply.truncated:
        if check is None:
            raise JudgeTruncated("the reply hit the token limit (finish reason length)")
        try:
            raw = validate(close_truncated(reply.text), prompt.schema)
            return raw, finish(raw, check)
        except JudgeError as exc:
            raise JudgeTruncated(
                f"the reply hit the token limit (finish reason length): {exc}"
            ) from exc
    try:
        raw = validate(extract_json(reply.text), prompt.schema)
    except JudgeInvalidOutput as exc:
        if not isinstance(exc, JudgeSchemaError) and looks_like_refusal(reply.text):
            raise JudgeRefusal(f"the judge declined: {reply.text[:120]!r}") from exc
        raise
    return raw, finish(raw, check)


def finish(data: Any, check: Check | None) -> Any:
    """`data` after the caller's `check`, if any."""
    return check(data) if check is not None else data
