"""Decomposing a text into claims with the shared `statements` prompt.

Faithfulness and both noise-sensitivity metrics send the identical request for a sample's
answer, so whichever runs first pays and the others read the cache (or join the call in
flight)."""

from __future__ import annotations

from typing import Any

from evaluators.judge.prompts.base import fence
from evaluators.judge.prompts.statements import STATEMENTS


def clean_items(items: list[str]) -> list[str]:
    """Stripped, non-empty, first occurrence of each (case-insensitive)."""
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        text = " ".join(item.split())
        if text and text.casefold() not in seen:
            seen.add(text.casefold())
            out.append(text)
    return out


async def extract_statements(
    judge: Any, model: str, question: str, text: str, *, metric: str, trace_id: str
) -> list[str]:
    user = f"{fence('question', question)}\n\n{fence('text', text)}"
    data = await judge.ask(STATEMENTS, user, model=model, metric=metric, trace_id=trace_id)
    return clean_items(list(data["statements"]))
