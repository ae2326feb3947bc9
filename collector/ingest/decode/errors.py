"""Typed decode failures: a reason code (a Prometheus label value) and a precise detail.

Every message that cannot be accepted becomes a dead letter carrying these two strings, so
an operator can see *what* was wrong (`reason`, low cardinality) and *where* (`detail`).
"""

from __future__ import annotations

from typing import Final

INVALID_JSON: Final = "invalid_json"
NOT_UTF8: Final = "not_utf8"
OVERSIZED: Final = "oversized"
WRONG_TYPE: Final = "wrong_type"
MISSING_FIELD: Final = "missing_field"
INVALID_VALUE: Final = "invalid_value"
UNKNOWN_SCHEMA: Final = "unknown_schema"
INVALID_OTLP: Final = "invalid_otlp"
EMPTY: Final = "empty"
TOO_DEEP: Final = "too_deep"
DUPLICATE_KEY: Final = "duplicate_key"

REASONS: Final = frozenset(
    {
        INVALID_JSON,
        NOT_UTF8,
        OVERSIZED,
        WRONG_TYPE,
        MISSING_FIELD,
        INVALID_VALUE,
        UNKNOWN_SCHEMA,
        INVALID_OTLP,
        EMPTY,
        TOO_DEEP,
        DUPLICATE_KEY,
    }
)


class DecodeError(ValueError):
    """A message (or one record in it) is not acceptable; never retriable."""

    def __init__(self, reason: str, detail: str) -> None:
        if reason not in REASONS:
            raise ValueError(f"unknown decode reason {reason!r}; known: {sorted(REASONS)}")
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail

    def __reduce__(self) -> tuple[type[DecodeError], tuple[str, str]]:
        return (DecodeError, (self.reason, self.detail))


def type_name(value: object) -> str:
    """The JSON name of a decoded value's type, for error details."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__
