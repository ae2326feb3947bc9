"""Chat messages as JSON attributes, in the GenAI conventions' "parts" form and the plain
`{"role", "content"}` form many libraries still write.

`gen_ai.input.messages`:  [{"role": "user", "parts": [{"type": "text", "content": "…"}]}]
`gen_ai.output.messages`: [{"role": "assistant", "parts": […], "finish_reason": "stop"}]
`gen_ai.system_instructions`: [{"type": "text", "content": "…"}]
A message's text is the concatenation of its text parts; other parts (tool calls, images,
blobs) carry no text. The attribute may arrive as a JSON string or, from the SDK's
structured form, as a list already.
"""

from __future__ import annotations

from typing import Any, Final

from collector.ingest.decode.conventions import base

Message = tuple[str, str]
"""(role, text)."""
INSTRUCTION_ROLES: Final = frozenset({"system", "developer"})
"""Roles of the messages that instruct the model rather than ask it."""


def parse(value: Any, max_depth: int) -> list[Message]:
    """The (role, text) messages of one attribute value; [] when it is not messages."""
    items = base.json_value(value, max_depth) if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        return []
    out = []
    for item in items:
        if isinstance(item, dict):
            text = message_text(item)
            if text is not None:
                out.append((str(item.get("role") or ""), text))
    return out


def message_text(message: dict[str, Any]) -> str | None:
    """A message's text: its text parts joined, or a plain string `content`."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = message.get("parts")
    if not isinstance(parts, list):
        parts = content if isinstance(content, list) else None
    if parts is None:
        return None
    texts = [part_text(p) for p in parts]
    joined = "".join(t for t in texts if t is not None)
    return joined if any(t is not None for t in texts) else None


def part_text(part: Any) -> str | None:
    """The text of one part (`{"type": "text", "content"|"text": …}` or a bare string)."""
    if isinstance(part, str):
        return part
    if isinstance(part, dict) and part.get("type", "text") == "text":
        for key in ("content", "text"):
            if isinstance(part.get(key), str):
                return str(part[key])
    return None


def instructions(value: Any, max_depth: int) -> list[str]:
    """The texts of `gen_ai.system_instructions`: a list of parts (JSON or structured), one
    part, or a plain string (written by apps that predate the parts form)."""
    parts = base.json_value(value, max_depth) if isinstance(value, str) else value
    if parts is None and isinstance(value, str):
        return [value] if value else []
    if isinstance(parts, dict):
        parts = [parts]
    if not isinstance(parts, list | tuple):
        return []
    return [text for text in map(part_text, parts) if text]


def last_user(messages: list[Message]) -> str | None:
    """The question an LLM call was asked: its last user message."""
    users = [text for role, text in messages if role == "user"]
    return users[-1] if users else None


def first_reply(messages: list[Message]) -> str | None:
    """The answer an LLM call gave: its first message not from the user."""
    return next((text for role, text in messages if role != "user"), None)
