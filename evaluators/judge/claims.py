"""Decomposing a text into claims with the shared `statements` prompt.

Faithfulness and both noise-sensitivity metrics send the identical request for a sample's
answer, so whichever runs first pays and the others read the cache (or join the call in
flight)."""

from __future__ import annotations

from evaluators.judge.metric import by_item, texts_of
from evaluators.judge.prompts.base import Prompt, fence, fence_contexts, fence_items
from evaluators.judge.prompts.statements import STATEMENTS
from evaluators.judge.protocol import Judge
from evaluators.judge.schemas import claim_list, numbered_rows
from evaluators.sample import Sample


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
    judge: Judge, model: str, question: str, text: str, *, metric: str, trace_id: str
) -> list[str]:
    user = f"{fence('question', question)}\n\n{fence('text', text)}"
    data = await judge.ask(
        STATEMENTS,
        user,
        model=model,
        metric=metric,
        trace_id=trace_id,
        schema=claim_list(STATEMENTS.schema, "statements", text),
    )
    return clean_items(list(data["statements"]))


async def share_in_contexts(
    judge: Judge,
    prompt: Prompt,
    sample: Sample,
    items: list[str],
    *,
    model: str,
    metric: str,
    heading: str,
    verdict: str,
) -> float:
    """Share of `items` the judge finds backed by the sample's contexts, in one request.

    `prompt` asks for `{"verdicts": [{"item": i, verdict: bool}, ...]}` over the numbered
    items listed under `heading` after all fenced contexts. The items were extracted by a
    judge from untrusted text, so they are fenced too.
    """
    user = (
        f"{fence_contexts(texts_of(sample))}\n\n{heading}:\n{fence_items(heading.lower(), items)}"
    )
    flags = await judge.ask(
        prompt,
        user,
        model=model,
        metric=metric,
        trace_id=sample.trace_id,
        check=lambda d: by_item(d["verdicts"], "item", verdict, len(items)),
        schema=numbered_rows(prompt.schema, "verdicts", "item", len(items)),
    )
    return float(sum(flags) / len(items))
