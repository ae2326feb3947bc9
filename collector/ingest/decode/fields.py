"""Strict field validators (required fields, feedback events): each names the field path
on failure. A trace's optional fields use the lenient readers of `optional` instead.

Conventions: a JSON `null` for an optional field is the same as the field being absent;
a boolean where a number is expected is an `invalid_value` (JSON has no bool/int overlap,
Python does); any other type mismatch is `wrong_type` with the expected and actual type.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from collector.ingest.decode.errors import (
    INVALID_VALUE,
    MISSING_FIELD,
    WRONG_TYPE,
    DecodeError,
    type_name,
)


def wrong_type(path: str, expected: str, value: object) -> DecodeError:
    return DecodeError(WRONG_TYPE, f"{path}: expected {expected}, got {type_name(value)}")


def required(obj: dict[str, Any], key: str, path: str = "") -> Any:
    value = obj.get(key)
    if value is None:
        where = f"{path}.{key}" if path else key
        if key in obj:
            raise DecodeError(MISSING_FIELD, f"{where}: required field is null")
        raise DecodeError(MISSING_FIELD, f"{where}: required field is missing")
    return value


def opt_str(value: Any, path: str) -> str | None:
    if value is None or type(value) is str:
        return value
    raise wrong_type(path, "string or null", value)


def opt_bool(value: Any, path: str) -> bool | None:
    if value is None or type(value) is bool:
        return value
    raise wrong_type(path, "boolean or null", value)


def opt_number(value: Any, path: str) -> float | None:
    kind = type(value)
    if value is None:
        return None
    if kind is float:
        if math.isfinite(value):
            return float(value)
        raise DecodeError(INVALID_VALUE, f"{path}: {value} is not a finite number")
    if kind is int:
        return float(value)
    if kind is bool:
        raise DecodeError(INVALID_VALUE, f"{path}: boolean {str(value).lower()} is not a number")
    raise wrong_type(path, "number or null", value)


def opt_str_list(value: Any, path: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if type(value) is not list:
        raise wrong_type(path, "array of strings or null", value)
    for i, item in enumerate(value):
        if type(item) is not str:
            raise wrong_type(f"{path}[{i}]", "string", item)
    return tuple(value)


def timestamp(value: Any, path: str) -> datetime:
    """An RFC 3339 date-time with an offset -> an aware UTC datetime."""
    if type(value) is not str:
        raise wrong_type(path, "RFC 3339 string", value)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise DecodeError(
            INVALID_VALUE, f"{path}: {value[:64]!r} is not an RFC 3339 date-time"
        ) from None
    if parsed.tzinfo is None or len(value) < 16 or value[10] not in "Tt ":
        raise DecodeError(
            INVALID_VALUE,
            f"{path}: {value[:64]!r} is not an RFC 3339 date-time with a UTC offset",
        )
    try:
        return parsed.astimezone(UTC)
    except (OverflowError, ValueError):
        raise DecodeError(
            INVALID_VALUE,
            f"{path}: {value[:64]!r} falls outside years 1..9999 once converted to UTC",
        ) from None


def trace_id(value: Any, path: str = "trace_id") -> str:
    if type(value) is not str:
        raise wrong_type(path, "string", value)
    if not 1 <= len(value) <= 128:
        raise DecodeError(INVALID_VALUE, f"{path}: length {len(value)} is outside 1..128")
    return value
