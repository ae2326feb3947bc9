"""`context_recall` (seed 002): the share of the reference's statements that the retrieved
contexts support.

    context_recall = |reference statements attributable to the contexts|
                     / |reference statements|

One request per sample and judge model splits the reference and attributes every statement.
A sample that retrieved nothing scores 0 without a request: none of the reference's claims
can be attributed to no context (seed 002), so a retrieval outage lowers this metric as it
lowers HitRate instead of shrinking `n`. Skipped without a reference, when the retrieved
contexts all lack text (retrieval happened but cannot be judged), or when the judge finds
no statement in the reference.
"""

from __future__ import annotations

from evaluators.judge.metric import NO_CONTEXT_TEXT, judge_metric, texts_of
from evaluators.judge.prompts.base import fence, fence_contexts
from evaluators.judge.prompts.context_recall import CONTEXT_RECALL
from evaluators.judge.protocol import Judge
from evaluators.judge.schemas import claim_list
from evaluators.outcome import Skipped
from evaluators.registry import EvalContext
from evaluators.sample import Sample

FAMILY = "context_recall"


def _precheck(sample: Sample, ctx: EvalContext) -> str | None:
    if not (sample.reference and sample.reference.strip()):
        return "no reference"
    return None if texts_of(sample) or not sample.contexts else NO_CONTEXT_TEXT


async def _per_model(judge: Judge, model: str, sample: Sample, ctx: EvalContext) -> float | Skipped:
    if not sample.contexts:
        return 0.0
    user = (
        f"{fence('question', sample.question)}\n\n"
        f"{fence('reference', sample.reference or '')}\n\n{fence_contexts(texts_of(sample))}"
    )
    data = await judge.ask(
        CONTEXT_RECALL,
        user,
        model=model,
        metric=FAMILY,
        trace_id=sample.trace_id,
        schema=claim_list(CONTEXT_RECALL.schema, "statements", sample.reference or ""),
    )
    rows = [r for r in data["statements"] if str(r["statement"]).strip()]
    if not rows:
        return Skipped("no statements")
    return sum(int(r["attributed"]) for r in rows) / len(rows)


SPEC = judge_metric(
    FAMILY,
    direction="higher",
    unit="ratio",
    description="Share of the reference's statements that the retrieved contexts support",
    needs="reference, contexts with text, a judge model",
    prompts=[CONTEXT_RECALL],
    precheck=_precheck,
    per_model=_per_model,
)
