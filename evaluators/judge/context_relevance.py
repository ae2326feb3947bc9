"""`context_relevance` (NVIDIA style, seeds 000/001): each context graded 0/1/2 for the
question, normalised by 2 and averaged.

    context_relevance = (1/N) * sum_i score_i / 2

One request per sample and judge model rates all N contexts together (RAGAS's NVIDIA
metric needs 2 to 10). Skipped when the sample has no context text.
"""

from __future__ import annotations

from evaluators.judge.metric import by_item, judge_metric, texts_of
from evaluators.judge.prompts.base import fence, fence_contexts
from evaluators.judge.prompts.context_relevance import CONTEXT_RELEVANCE
from evaluators.judge.protocol import Judge
from evaluators.judge.schemas import numbered_rows
from evaluators.registry import EvalContext
from evaluators.sample import Sample

FAMILY = "context_relevance"


def _precheck(sample: Sample, ctx: EvalContext) -> str | None:
    return None if texts_of(sample) else "no contexts"


async def _per_model(judge: Judge, model: str, sample: Sample, ctx: EvalContext) -> float:
    texts = texts_of(sample)
    user = f"{fence('question', sample.question)}\n\n{fence_contexts(texts)}"
    grades = await judge.ask(
        CONTEXT_RELEVANCE,
        user,
        model=model,
        metric=FAMILY,
        trace_id=sample.trace_id,
        check=lambda d: by_item(d["ratings"], "context", "score", len(texts)),
        schema=numbered_rows(CONTEXT_RELEVANCE.schema, "ratings", "context", len(texts)),
    )
    return float(sum(g / 2.0 for g in grades) / len(grades))


SPEC = judge_metric(
    FAMILY,
    direction="higher",
    description="Mean relevance of the retrieved contexts to the question (0/1/2 per "
    "context, normalised to 0-1), graded by the judge",
    needs="question, contexts with text, a judge model",
    prompts=[CONTEXT_RELEVANCE],
    precheck=_precheck,
    per_model=_per_model,
)
