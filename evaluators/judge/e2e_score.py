"""`e2e_score` (seed 004 §6.4.1): the judge's 0-1 rating of how useful the answer is
compared with the reference (1 as useful, 0.5 partly, 0 not useful). One request per sample
and judge model; skipped without an answer or a reference."""

from __future__ import annotations

from evaluators.judge.metric import judge_metric
from evaluators.judge.prompts.base import fence
from evaluators.judge.prompts.scores import E2E_SCORE
from evaluators.judge.protocol import Judge
from evaluators.registry import EvalContext
from evaluators.sample import Sample

FAMILY = "e2e_score"


def _precheck(sample: Sample, ctx: EvalContext) -> str | None:
    if not (sample.answer and sample.answer.strip()):
        return "no answer"
    return None if sample.reference and sample.reference.strip() else "no reference"


async def _per_model(judge: Judge, model: str, sample: Sample, ctx: EvalContext) -> float:
    user = (
        f"{fence('question', sample.question)}\n\n"
        f"{fence('reference', sample.reference or '')}\n\n"
        f"{fence('answer', sample.answer or '')}"
    )
    data = await judge.ask(E2E_SCORE, user, model=model, metric=FAMILY, trace_id=sample.trace_id)
    return float(data["score"])


SPEC = judge_metric(
    FAMILY,
    direction="higher",
    description="Judge's 0-1 rating of the answer's usefulness against the reference",
    needs="question, answer, reference, a judge model",
    prompts=[E2E_SCORE],
    precheck=_precheck,
    per_model=_per_model,
)
