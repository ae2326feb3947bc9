"""`faithfulness_rating` (seed 004 §5.5.1): the judge's single 0-1 rating of how faithful
the answer is to the retrieved contexts (1 fully consistent, no hallucination; 0.5 partly;
0 hallucinated or contradicting them).

Seed 002's `faithfulness` is another quantity, the share of the answer's statements the
contexts support (`evaluators.judge.faithfulness`); both are offered. The seed 004 §11.2
bands (excellent > 0.9, good 0.7-0.9, needs attention < 0.7) were set for this rating.
One request per sample and judge model; skipped without an answer or contexts; a rating
outside 0..1 is an `out_of_range` error.
"""

from __future__ import annotations

from evaluators.judge.metric import judge_metric, texts_of
from evaluators.judge.prompts.base import fence, fence_contexts
from evaluators.judge.prompts.scores import FAITHFULNESS_RATING
from evaluators.judge.protocol import Judge
from evaluators.registry import EvalContext
from evaluators.sample import Sample

FAMILY = "faithfulness_rating"


def _precheck(sample: Sample, ctx: EvalContext) -> str | None:
    if not (sample.answer and sample.answer.strip()):
        return "no answer"
    return None if texts_of(sample) else "no contexts"


async def _per_model(judge: Judge, model: str, sample: Sample, ctx: EvalContext) -> float:
    user = (
        f"{fence_contexts(texts_of(sample))}\n\n{fence('question', sample.question)}\n\n"
        f"{fence('answer', sample.answer or '')}"
    )
    data = await judge.ask(
        FAITHFULNESS_RATING, user, model=model, metric=FAMILY, trace_id=sample.trace_id
    )
    return float(data["score"])


SPEC = judge_metric(
    FAMILY,
    direction="higher",
    description="Judge's single 0-1 rating of the answer's faithfulness to the retrieved "
    "contexts (seed 004; the §11.2 thresholds apply to it)",
    needs="question, answer, contexts with text, a judge model",
    prompts=[FAITHFULNESS_RATING],
    precheck=_precheck,
    per_model=_per_model,
)
