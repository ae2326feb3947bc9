"""The text inside an OpenInference `input.value` / `output.value`.

Instrumentors serialize whatever the framework passed: a string, a JSON object of the
chain's inputs (`{"question": ...}`, LlamaIndex's `{"query_str": ...}`), a LangChain message
(`{"type": "ai", "data": {"content": ...}}` from `message_to_dict`, its `model_dump`
`{"type": "ai", "content": ...}`, or the constructor form `{"lc": 1, "id": [...,
"AIMessage"], "kwargs": {"content": ...}}`), an OpenAI-style `{"role", "content"}` message,
a list of messages, or a message's content blocks (`[{"type": "text", "text": ...}]`).
`question` and `answer` dig the text out of those (the last user message of a list for a
question, the last AI message for an answer); anything else stays as sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from collector.ingest.decode.conventions import base
from collector.ingest.decode.limits import DEFAULT_MAX_DEPTH

QUESTION_KEYS: Final = ("question", "query", "query_str", "input", "message", "messages")
"""Keys of a JSON object that hold the question, in order."""
ANSWER_KEYS: Final = ("answer", "output", "response", "result", "messages")
"""Keys of a JSON object that hold the answer, in order."""

_USER: Final = frozenset({"human", "user", "HumanMessage", "HumanMessageChunk"})
_AI: Final = frozenset({"ai", "assistant", "AIMessage", "AIMessageChunk"})


def question(text: str, mime: Any, max_depth: int = DEFAULT_MAX_DEPTH) -> str:
    """The question in an `input.value` (the value itself when it holds none)."""
    return _dig(text, mime, QUESTION_KEYS, _USER, max_depth)


def answer(text: str, mime: Any, max_depth: int = DEFAULT_MAX_DEPTH) -> str:
    """The answer in an `output.value` (the value itself when it holds none)."""
    return _dig(text, mime, ANSWER_KEYS, _AI, max_depth)


def _dig(text: str, mime: Any, keys: Sequence[str], roles: frozenset[str], depth: int) -> str:
    stripped = text.strip()
    if mime != "application/json" and not stripped.startswith(("{", "[")):
        return text
    value = base.json_value(stripped, depth)
    if value is None:
        return text
    found = _text(value, keys, roles, depth)
    return found if found is not None else text


def _text(value: Any, keys: Sequence[str], roles: frozenset[str], depth: int) -> str | None:
    if depth <= 0:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        said = [m for m in value if isinstance(m, dict) and _role(m) in roles]
        if said:
            return _content(said[-1])
        if value and all(isinstance(b, dict) and "text" in b for b in value):
            return _blocks(value)
        return None
    if not isinstance(value, dict):
        return None
    if _role(value) is not None:
        return _content(value)
    for key in keys:
        if key in value:
            found = _text(value[key], keys, roles, depth - 1)
            if found is not None:
                return found
    return None


def _role(message: dict[str, Any]) -> str | None:
    """A serialized message's role (LangChain type or class, or OpenAI role), else None."""
    if message.get("lc") == 1 and isinstance(message.get("id"), list) and message["id"]:
        return str(message["id"][-1])
    data = message.get("data")
    body: dict[str, Any] = data if isinstance(data, dict) else message
    if "content" not in body:
        return None
    for key in ("type", "role"):
        role = body.get(key, message.get(key))
        if isinstance(role, str):
            return role
    return None


def _content(message: dict[str, Any]) -> str | None:
    body = message
    for key in ("kwargs", "data"):
        if isinstance(message.get(key), dict):
            body = message[key]
    content = body.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return _blocks(content)
    return None


def _blocks(blocks: list[Any]) -> str | None:
    """The text of content blocks (`{"type": "text", "text": ...}`), joined."""
    texts = []
    for block in blocks:
        if isinstance(block, dict) and block.get("type", "text") == "text":
            text = block.get("text")
            if isinstance(text, str):
                texts.append(text)
    return "".join(texts) if texts else None
