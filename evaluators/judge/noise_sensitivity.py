"""`noise_sensitivity_relevant` / `noise_sensitivity_irrelevant` (seed 002, RAGAS's
definition; lower is better): how often the answer states something wrong that a relevant
(resp. irrelevant) retrieved context supports.

With reference statements R, answer statements A and contexts C:
  - a context is relevant when it supports at least one reference statement;
  - an answer statement is incorrect when the reference does not support it;
  - relevant_faithful(a): some relevant context supports a;
  - irrelevant_faithful(a): some irrelevant context supports a, and no relevant one does.

    noise_sensitivity_relevant   = mean_a [incorrect(a) and relevant_faithful(a)]
    noise_sensitivity_irrelevant = mean_a [incorrect(a) and irrelevant_faithful(a)]

At most three requests per sample and judge model, whatever the number of contexts (RAGAS
needs 2N+3): split the answer (shared with faithfulness) and the reference, then one
request maps every statement to the contexts and the reference. Both modes send identical
requests, so the second one is served from the cache.
Skipped without answer, reference or contexts, or when either text yields no statement.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from evaluators.judge.claims import extract_statements
from evaluators.judge.errors import JudgeOutOfRange
from evaluators.judge.metric import by_item, judge_metric, texts_of
from evaluators.judge.prompts.base import fence, fence_contexts, fence_items
from evaluators.judge.prompts.noise_sensitivity import NOISE_SUPPORT
from evaluators.judge.prompts.statements import STATEMENTS
from evaluators.judge.protocol import Judge
from evaluators.judge.schemas import context_numbers, numbered_rows
from evaluators.outcome import Skipped
from evaluators.registry import EvalContext
from evaluators.sample import Sample

RELEVANT = "noise_sensitivity_relevant"
IRRELEVANT = "noise_sensitivity_irrelevant"


def noise_sensitivity(
    reference_support: Sequence[set[int]],
    answer_in_reference: Sequence[bool],
    answer_support: Sequence[set[int]],
    mode: str,
) -> float:
    """The formula above on plain sets of supporting context numbers."""
    relevant_contexts = set().union(*reference_support) if reference_support else set()
    hits = 0
    for in_reference, contexts in zip(answer_in_reference, answer_support, strict=True):
        relevant = bool(contexts & relevant_contexts)
        irrelevant = bool(contexts - relevant_contexts) and not relevant
        faithful = relevant if mode == "relevant" else irrelevant
        if faithful and not in_reference:
            hits += 1
    return hits / len(answer_in_reference)


def _precheck(sample: Sample, ctx: EvalContext) -> str | None:
    if not (sample.answer and sample.answer.strip()):
        return "no answer"
    if not (sample.reference and sample.reference.strip()):
        return "no reference"
    return None if texts_of(sample) else "no contexts"


def _context_set(values: Sequence[Any], n_contexts: int) -> set[int]:
    out = {int(v) for v in values}
    if any(not 1 <= v <= n_contexts for v in out):
        raise JudgeOutOfRange(f"context numbers {sorted(out)} are not all in 1..{n_contexts}")
    return out


def _support(
    data: Mapping[str, Any], n_ref: int, n_ans: int, n_contexts: int
) -> tuple[list[set[int]], list[bool], list[set[int]]]:
    ref_rows = by_item(data["reference"], "item", "contexts", n_ref)
    ans_rows = by_item(
        [{"item": r["item"], "row": r} for r in data["answer"]], "item", "row", n_ans
    )
    return (
        [_context_set(r, n_contexts) for r in ref_rows],
        [bool(r["in_reference"]) for r in ans_rows],
        [_context_set(r["contexts"], n_contexts) for r in ans_rows],
    )


def _schema(n_ref: int, n_ans: int, n_contexts: int) -> dict[str, Any]:
    """NOISE_SUPPORT's schema for this input: every claim once, known context numbers."""
    schema = numbered_rows(NOISE_SUPPORT.schema, "reference", "item", n_ref)
    schema = numbered_rows(schema, "answer", "item", n_ans)
    schema = context_numbers(schema, ("reference", "items", "contexts"), n_contexts)
    return context_numbers(schema, ("answer", "items", "contexts"), n_contexts)


def _make_per_model(mode: str, family: str) -> Any:
    async def per_model(
        judge: Judge, model: str, sample: Sample, ctx: EvalContext
    ) -> float | Skipped:
        answer_statements, reference_statements = await asyncio.gather(
            extract_statements(
                judge,
                model,
                sample.question,
                sample.answer or "",
                metric=family,
                trace_id=sample.trace_id,
            ),
            extract_statements(
                judge,
                model,
                sample.question,
                sample.reference or "",
                metric=family,
                trace_id=sample.trace_id,
            ),
        )
        if not answer_statements:
            return Skipped("no statements")
        if not reference_statements:
            return Skipped("no reference statements")
        texts = texts_of(sample)
        user = (
            f"{fence_contexts(texts)}\n\n{fence('reference', sample.reference or '')}\n\n"
            "Reference claims:\n"
            f"{fence_items('reference_claims', reference_statements, prefix='R')}\n\n"
            f"Answer claims:\n{fence_items('answer_claims', answer_statements, prefix='A')}"
        )
        ref_support, in_reference, ans_support = await judge.ask(
            NOISE_SUPPORT,
            user,
            model=model,
            metric=family,
            trace_id=sample.trace_id,
            check=lambda d: _support(
                d, len(reference_statements), len(answer_statements), len(texts)
            ),
            schema=_schema(len(reference_statements), len(answer_statements), len(texts)),
        )
        return noise_sensitivity(ref_support, in_reference, ans_support, mode)

    return per_model


for _mode, _family in (("relevant", RELEVANT), ("irrelevant", IRRELEVANT)):
    judge_metric(
        _family,
        description=f"Share of the answer's statements that are wrong and supported by "
        f"{_mode} retrieved contexts (lower is better)",
        needs="question, answer, reference, contexts with text, a judge model",
        prompts=[STATEMENTS, NOISE_SUPPORT],
        precheck=_precheck,
        per_model=_make_per_model(_mode, _family),
        direction="lower",
        unit="ratio",
    )
