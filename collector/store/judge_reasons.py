"""What the judge said about one trace for one metric, as one short line.

A judge metric makes one or more calls per trace (faithfulness: the answer's statements,
then a verdict per statement; score prompts: a reason and a score). Their parsed outputs
are stored in `judgments.parsed`. This turns them into what an on-call engineer needs
first: the score prompts' reason, or which numbered items the judge rejected, quoted from
the list a sibling call produced (the statements, claims or questions), or the error of a
call that failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

MAX_CHARS = 500
"""A reason longer than this is cut (the whole output stays in `judgments`)."""

Call = tuple[Any, str, str | None]
"""(parsed output or None, status, error type) of one judge call, oldest first."""


def _items(parsed: Any) -> list[str] | None:
    """The first list of strings in a parsed output (statements, claims, questions)."""
    if not isinstance(parsed, dict):
        return None
    for value in parsed.values():
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return value
    return None


def _rejected(parsed: Any) -> tuple[list[int], int] | None:
    """(1-based numbers of the items with verdict 0, how many were judged), if `parsed`
    is a verdict list (`{"verdicts": [{"item": 1, "supported": 0}, ...]}`)."""
    if not isinstance(parsed, dict) or not isinstance(parsed.get("verdicts"), list):
        return None
    rejected, judged = [], 0
    for position, row in enumerate(parsed["verdicts"], start=1):
        if not isinstance(row, dict):
            continue
        numbers = [v for v in row.values() if isinstance(v, int) and not isinstance(v, bool)]
        if len(numbers) < 2:
            continue
        judged += 1
        item, verdict = numbers[0], numbers[-1]
        if verdict == 0:
            rejected.append(item if item >= 1 else position)
    return rejected, judged


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


def summarize(calls: Sequence[Call]) -> str | None:
    """One line for a trace's judge calls of one metric, or None if nothing to say."""
    parts: list[str] = []
    items: list[str] | None = None
    for parsed, status, error_type in calls:
        if status != "ok":
            parts.append(f"judge call failed: {error_type or status}")
            continue
        if isinstance(parsed, dict) and isinstance(parsed.get("reason"), str):
            parts.append(parsed["reason"])
            continue
        listed = _items(parsed)
        if listed is not None:
            items = listed
            continue
        verdicts = _rejected(parsed)
        if verdicts is None:
            continue
        rejected, judged = verdicts
        if not rejected:
            parts.append(f"all {judged} items accepted")
            continue
        quoted = [
            f"#{n} {items[n - 1]!r}" if items and 1 <= n <= len(items) else f"#{n}"
            for n in rejected
        ]
        parts.append(f"{len(rejected)} of {judged} rejected: " + "; ".join(quoted))
    return _cut(" | ".join(parts)) if parts else None
