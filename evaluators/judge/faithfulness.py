"""`faithfulness` (seed 002, RAGAS's definition): the share of the answer's statements that
the retrieved contexts support.

    faithfulness = |answer statements supported by the contexts| / |answer statements|

Seed 004 §5.5.1 defines faithfulness differently, as one 0-1 judge rating of the whole
answer: that is `faithfulness_rating`, and the seed 004 §11.2 thresholds belong to it.

Two requests per sample and judge model: split the answer into statements (shared with
noise sensitivity through the cache), then check them all against all contexts at once.
Skipped without an answer or contexts, or when the answer makes no factual statement.
"""

from __future__ import annotations

from evaluators.judge.claims import extract_statements, share_in_contexts
from evaluators.judge.metric import judge_metric, texts_of
from evaluators.judge.prompts.statements import STATEMENT_SUPPORT, STATEMENTS
from evaluators.judge.protocol import Judge
from evaluators.outcome import Skipped
from evaluators.registry import EvalContext
from evaluators.sample import Sample

FAMILY = "faithfulness"


def _precheck(sample: Sample, ctx: EvalContext) -> str | None:
    if not (sample.answer and sample.answer.strip()):
        return "no answer"
    return None if texts_of(sample) else "no contexts"


async def _per_model(judge: Judge, model: str, sample: Sample, ctx: EvalContext) -> float | Skipped:
    statements = await extract_statements(
        judge,
        model,
        sample.question,
        sample.answer or "",
        metric=FAMILY,
        trace_id=sample.trace_id,
    )
    if not statements:
        return Skipped("no statements")
    return await share_in_contexts(
        judge,
        STATEMENT_SUPPORT,
        sample,
        statements,
        model=model,
        metric=FAMILY,
        heading="Claims",
        verdict="supported",
    )


SPEC = judge_metric(
    FAMILY,
    direction="higher",
    unit="ratio",
    description="Share of the answer's statements supported by the retrieved contexts",
    needs="question, answer, contexts with text, a judge model",
    prompts=[STATEMENTS, STATEMENT_SUPPORT],
    precheck=_precheck,
    per_model=_per_model,
)
