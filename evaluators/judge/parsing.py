"""Turn a judge's reply into validated data: find the JSON, check its shape and ranges.

Models wrap JSON in code fences or sentences; `extract_json` finds the object anyway.
`validate` checks a small JSON-Schema subset (object/array/string/integer/number/boolean,
required, items, minItems/maxItems, enum, minimum/maximum) — the same schema we send as
`response_format`. Shape problems raise `JudgeSchemaError` (worth one repair request);
numbers outside their range raise `JudgeOutOfRange` (a typed error, never a score).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from evaluators.judge.errors import JudgeInvalidOutput, JudgeOutOfRange, JudgeSchemaError

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_REFUSAL = re.compile(
    r"^\s*(i'?m sorry|i am sorry|sorry,|i can(?:no|')t|i cannot|i won'?t|i'?m unable|"
    r"i am unable|as an ai|извините|к сожалению,? я не могу|я не могу|не могу помочь)",
    re.IGNORECASE,
)


def looks_like_refusal(text: str) -> bool:
    """A reply that is a sentence declining the task rather than an answer."""
    return bool(_REFUSAL.search(text)) and "{" not in text


def extract_json(text: str) -> Any:
    """The first JSON object in `text` (bare, fenced, or surrounded by prose)."""
    stripped = text.strip()
    if not stripped:
        raise JudgeInvalidOutput("the reply is empty")
    candidates = [stripped, *(m.group(1).strip() for m in _FENCE.finditer(stripped))]
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[{\[]", stripped):
        try:
            value, _end = decoder.raw_decode(stripped, match.start())
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    preview = stripped[:80].replace("\n", " ")
    raise JudgeInvalidOutput(f"no JSON object in the reply: {preview!r}")


def close_truncated(text: str) -> Any:
    """The JSON object a reply cut at the token limit was writing, closed where it stopped.

    An unfinished string is dropped with the key or item it belonged to, a dangling key or
    comma is removed, and open arrays and objects are closed, so `{"verdicts": [{"item": 1,
    "supported": 1}, {"item": 2, "sup` becomes `{"verdicts": [{"item": 1, "supported": 1},
    {}]}`. Raises `JudgeInvalidOutput` when no object can be recovered.
    """
    start = text.find("{")
    if start < 0:
        raise JudgeInvalidOutput("the truncated reply holds no JSON object")
    body = text[start:]
    stack: list[str] = []
    in_string = escaped = False
    last_safe = 0  # end of the last complete value / opener, outside any string
    safe_stack: list[str] = []
    for i, ch in enumerate(body):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                last_safe, safe_stack = i + 1, list(stack)
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
            last_safe, safe_stack = i + 1, list(stack)
        elif ch in "}]":
            if not stack:
                break
            stack.pop()
            last_safe, safe_stack = i + 1, list(stack)
            if not stack:
                return json.loads(body[: i + 1])
        elif ch.isdigit() or ch in "eE.+-" or ch.isalpha():
            last_safe, safe_stack = i + 1, list(stack)
    head = body[:last_safe].rstrip()
    stack = safe_stack
    # Drop what cannot stand: a trailing comma, a key without its value, a lone key.
    for _ in range(4):
        trimmed = re.sub(r'(,\s*|\s*"(?:[^"\\]|\\.)*"\s*:?\s*)$', "", head)
        candidate = trimmed + "".join(reversed(stack))
        try:
            return json.loads(head + "".join(reversed(stack)))
        except ValueError:
            pass
        try:
            return json.loads(candidate)
        except ValueError:
            head = trimmed.rstrip().rstrip(":").rstrip()
    raise JudgeInvalidOutput("the truncated reply could not be closed into JSON")


def validate(value: Any, schema: Mapping[str, Any], path: str = "$") -> Any:
    """Check `value` against `schema`; return it with integral floats made ints."""
    kind = schema.get("type")
    if kind == "object":
        if not isinstance(value, dict):
            raise JudgeSchemaError(f"{path}: expected an object")
        out: dict[str, Any] = dict(value)
        props: Mapping[str, Any] = schema.get("properties", {})
        for name in schema.get("required", ()):
            if name not in value:
                raise JudgeSchemaError(f"{path}: missing {name!r}")
        for name, sub in props.items():
            if name in value:
                out[name] = validate(value[name], sub, f"{path}.{name}")
        return out
    if kind == "array":
        if not isinstance(value, list):
            raise JudgeSchemaError(f"{path}: expected an array")
        if len(value) < schema.get("minItems", 0):
            raise JudgeSchemaError(f"{path}: at least {schema['minItems']} items expected")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise JudgeSchemaError(f"{path}: at most {schema['maxItems']} items expected")
        items = schema.get("items")
        if items is None:
            return list(value)
        return [validate(v, items, f"{path}[{i}]") for i, v in enumerate(value)]
    if kind == "string":
        if not isinstance(value, str):
            raise JudgeSchemaError(f"{path}: expected a string")
        return value
    if kind == "boolean":
        if not isinstance(value, bool):
            raise JudgeSchemaError(f"{path}: expected true or false")
        return value
    if kind in ("integer", "number"):
        number = _number(value, kind, path)
        _check_range(number, schema, path)
        return number
    return value


def _number(value: Any, kind: str, path: str) -> int | float:
    if isinstance(value, bool):
        # Verdicts come back as true/false about as often as 1/0; accept both.
        return int(value)
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise JudgeSchemaError(f"{path}: expected a number, got {value!r}") from None
    if not isinstance(value, int | float) or not math.isfinite(value):
        raise JudgeSchemaError(f"{path}: expected a number")
    if kind == "integer":
        if isinstance(value, float) and not value.is_integer():
            raise JudgeOutOfRange(f"{path}: {value} is not a whole number")
        return int(value)
    return float(value)


def _check_range(number: float, schema: Mapping[str, Any], path: str) -> None:
    if "enum" in schema and number not in schema["enum"]:
        raise JudgeOutOfRange(f"{path}: {number} is not one of {list(schema['enum'])}")
    if "minimum" in schema and number < schema["minimum"]:
        raise JudgeOutOfRange(f"{path}: {number} is below {schema['minimum']}")
    if "maximum" in schema and number > schema["maximum"]:
        raise JudgeOutOfRange(f"{path}: {number} is above {schema['maximum']}")
