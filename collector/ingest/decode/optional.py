"""Lenient readers for a trace's optional fields: an unexpected shape never costs the trace.

Each reader returns the field's value when it fits the contract (SPEC §2), a converted
value when the conversion loses nothing and cannot be misread, and otherwise `None` after
handing the raw value to `FieldIssues`, which keeps it (the decoder stores it under
`metadata["_invalid"][path]`) and names the top-level field for
`ragpulse_traces_field_warnings_total{field}`.

Conversions (not counted, nothing is lost): a numeric string where a number is expected
(`"0.83"`), an integral number or a string of digits where an integer is expected
(`2.0`, `"2"`), `"true"`/`"false"` (any case) and `0`/`1` where a boolean is expected, an
integer id or user id (`42` -> `"42"`), a single string where a list of strings is
expected, `true`/`false` as a tag value (`"true"`/`"false"`).
"""

from __future__ import annotations

import math
from typing import Any, Final

from evaluators.labels import MAX_METRIC_NAME, label_scale

INT32_MAX: Final = 2**31 - 1
INVALID_KEY: Final = "_invalid"
"""Where optional values that did not fit are kept: `metadata["_invalid"][path]`."""
_BOOL_WORDS: Final = {"true": True, "false": False}


class FieldIssues:
    """The optional values that did not fit: path -> raw value, and their top-level fields."""

    __slots__ = ("fields", "raw")

    def __init__(self) -> None:
        self.raw: dict[str, Any] = {}
        self.fields: list[str] = []

    def keep(self, path: str, value: Any) -> None:
        self.raw[path] = value
        self.fields.append(path.split(".", 1)[0].split("[", 1)[0])

    def __bool__(self) -> bool:
        return bool(self.raw)


def text(value: Any, path: str, issues: FieldIssues, max_len: int | None = None) -> str | None:
    """A string (at most `max_len` characters when given, for bounded columns)."""
    if value is None:
        return None
    if type(value) is str and (max_len is None or len(value) <= max_len):
        return value
    issues.keep(path, value)
    return None


def ident(value: Any, path: str, issues: FieldIssues, max_len: int = 256) -> str | None:
    """An id-like string; an integer id becomes its decimal string."""
    if type(value) is int:
        digits = str(value)
        if len(digits) <= max_len:
            return digits
    return text(value, path, issues, max_len)


def boolean(value: Any, path: str, issues: FieldIssues) -> bool | None:
    if value is None or type(value) is bool:
        return value
    if type(value) is str and value.strip().lower() in _BOOL_WORDS:
        return _BOOL_WORDS[value.strip().lower()]
    if type(value) is int and value in (0, 1):
        return bool(value)
    issues.keep(path, value)
    return None


def _as_float(value: Any) -> float | None:
    kind = type(value)
    if kind is float or kind is int:
        number = float(value)
    elif kind is str:
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def number(
    value: Any, path: str, issues: FieldIssues, minimum: float | None = None
) -> float | None:
    """A finite number (at least `minimum` when given); a numeric string is converted."""
    if value is None:
        return None
    out = _as_float(value)
    if out is not None and (minimum is None or out >= minimum):
        return out
    issues.keep(path, value)
    return None


def integer(
    value: Any, path: str, issues: FieldIssues, lo: int = 0, hi: int = INT32_MAX
) -> int | None:
    """An integer in lo..hi (a 32-bit column): integral numbers and digit strings convert."""
    if value is None:
        return None
    out: int | None = None
    kind = type(value)
    if kind is int:
        out = value
    elif kind is float and value.is_integer():
        out = int(value)
    elif kind is str and len(value) < 20:
        try:
            out = int(value.strip())
        except ValueError:
            out = None
    if out is not None and lo <= out <= hi:
        return out
    issues.keep(path, value)
    return None


def str_list(value: Any, path: str, issues: FieldIssues) -> tuple[str, ...] | None:
    """A list of strings; one string is a list of one, integer items become strings."""
    if value is None:
        return None
    if type(value) is str:
        return (value,)
    if type(value) is list:
        for v in value:  # hot path: strings already
            if type(v) is not str:
                break
        else:
            return tuple(value)
        items = [str(v) if type(v) is int else v for v in value]
        if all(type(v) is str for v in items):
            return tuple(items)
    issues.keep(path, value)
    return None


def grades(value: Any, path: str, issues: FieldIssues) -> dict[str, int] | None:
    """Graded relevance, document id -> integer grade; kept raw whole when any grade is bad
    (a partial ground truth would change which documents count as relevant)."""
    if value is None:
        return None
    if type(value) is dict:
        scratch = FieldIssues()
        out = {k: integer(g, k, scratch, -INT32_MAX, INT32_MAX) for k, g in value.items()}
        # a null grade is a bad grade too: stored, it would stop every job reading the trace
        if not scratch and None not in out.values():
            return out  # type: ignore[return-value]
    issues.keep(path, value)
    return None


def tags(value: Any, path: str, issues: FieldIssues) -> dict[str, str | int | float] | None:
    """Free labels, string -> string or number; other values are kept raw one by one."""
    if value is None:
        return None
    if type(value) is not dict:
        issues.keep(path, value)
        return None
    out: dict[str, str | int | float] = {}
    for key, tag in value.items():
        kind = type(tag)
        if kind is str or kind is int or kind is float:
            out[key] = tag
        elif kind is bool:
            out[key] = "true" if tag else "false"
        else:
            issues.keep(f"{path}.{key}", tag)
    return out or None


def urls(value: Any, path: str, issues: FieldIssues) -> tuple[str, ...] | None:
    """`shown_url`: one url or a list of them; empty strings mean "none" (SQL NULLs)."""
    found = str_list(value, path, issues)
    if found is None:
        return None
    kept = tuple(dict.fromkeys(u.strip() for u in found if u.strip()))
    return kept or None


def human_labels(value: Any, path: str, issues: FieldIssues) -> dict[str, float] | None:
    """`labels`: judge metric name -> a human value on its label scale
    (`evaluators.labels`). A label of an unknown metric, of a wrong type or off the scale
    is kept raw on its own (`labels.<metric>`); the others stay."""
    if value is None:
        return None
    if type(value) is not dict:
        issues.keep(path, value)
        return None
    out: dict[str, float] = {}
    for metric, label in value.items():
        number = _as_float(label) if type(label) is not bool else float(label)
        try:
            scale = label_scale(metric) if len(metric) <= MAX_METRIC_NAME else None
        except ValueError:
            scale = None
        if number is None or scale is None or scale.check(number) is not None:
            issues.keep(f"{path}.{metric[:MAX_METRIC_NAME]}", label)
            continue
        out[metric] = number
    return out or None
