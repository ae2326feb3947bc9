"""`answer_relevance` (seed 004 §5.5.2): the judge's 0-1 rating of how well the answer
addresses the question (1 fully, 0.5 in part, 0 not at all). One request per sample and
judge model; skipped without an answer; a rating outside 0..1 is an `out_of_range` error."""

from __future__ import annotations

from evaluators.judge.metric import judge_metric
from evaluators.judge.prompts.base import fence
from evaluators.judge.prompts.scores import ANSWER_RELEVANCE
from evaluators.judge.protocol import Judge
from evaluators.registry import EvalContext
from evaluators.sample import Sample

FAMILY = "answer_relevance"


def _precheck(sample: Sample, ctx: EvalContext) -> str | None:
    return None if sample.answer and sample.answer.strip() else "no answer"


async def _per_model(judge: Judge, model: str, sample: Sample, ctx: EvalContext) -> float:
    user = f"{fence('question', sample.question)}\n\n{fence('answer', sample.answer or '')}"
    data = await judge.ask(
        ANSWER_RELEVANCE, user, model=model, metric=FAMILY, trace_id=sample.trace_id
    )
    return float(data["score"])


SPEC = judge_metric(
    FAMILY,
    direction="higher",
    description="Judge's 0-1 rating of how well the answer addresses the question",
    needs="question, answer, a judge model",
    prompts=[ANSWER_RELEVANCE],
    precheck=_precheck,
    per_model=_per_model,
)
