"""`context_precision` (seed 002): are the useful contexts ranked first? Average precision
over the judge's per-context verdicts.

    context_precision = sum_k (precision@k * v_k) / sum_k v_k     (0 when no v_k is 1)

where v_k = 1 when the context at rank k was useful for reaching the target answer.
Strategy (option "context_precision.strategy"): "auto" (default) judges against the
reference when the sample has one, else against the system's answer (response-based);
"reference" or "response" force one (a sample lacking it is skipped). One request per
sample and judge model rates all contexts (RAGAS needs one per context).
"""

from __future__ import annotations

from evaluators.judge.metric import by_item, judge_metric, texts_of
from evaluators.judge.prompts.base import fence, fence_contexts
from evaluators.judge.prompts.context_precision import CONTEXT_PRECISION
from evaluators.judge.protocol import Judge
from evaluators.judge.schemas import numbered_rows
from evaluators.registry import EvalContext
from evaluators.sample import Sample

FAMILY = "context_precision"
OPTION = "context_precision.strategy"
STRATEGIES = ("auto", "reference", "response")


def average_precision(verdicts: list[int]) -> float:
    hits = 0
    total = 0.0
    for rank, useful in enumerate(verdicts, start=1):
        if useful:
            hits += 1
            total += hits / rank
    return total / hits if hits else 0.0


def _target(sample: Sample, ctx: EvalContext) -> tuple[str, str | None]:
    strategy = str(ctx.options.get(OPTION, "auto"))
    if strategy not in STRATEGIES:
        raise ValueError(f"{OPTION} must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
    has_reference = bool(sample.reference and sample.reference.strip())
    if strategy == "reference" or (strategy == "auto" and has_reference):
        return "reference", sample.reference if has_reference else None
    has_answer = bool(sample.answer and sample.answer.strip())
    return "response", sample.answer if has_answer else None


def _precheck(sample: Sample, ctx: EvalContext) -> str | None:
    if not texts_of(sample):
        return "no contexts"
    kind, text = _target(sample, ctx)
    if text is None:
        return "no reference" if kind == "reference" else "no answer"
    return None


async def _per_model(judge: Judge, model: str, sample: Sample, ctx: EvalContext) -> float:
    texts = texts_of(sample)
    kind, target = _target(sample, ctx)
    user = (
        f"{fence('question', sample.question)}\n\n"
        f"{fence('target_answer', target or '', kind=kind)}\n\n{fence_contexts(texts)}"
    )
    verdicts = await judge.ask(
        CONTEXT_PRECISION,
        user,
        model=model,
        metric=FAMILY,
        trace_id=sample.trace_id,
        check=lambda d: by_item(d["verdicts"], "context", "useful", len(texts)),
        schema=numbered_rows(CONTEXT_PRECISION.schema, "verdicts", "context", len(texts)),
    )
    return average_precision(verdicts)


SPEC = judge_metric(
    FAMILY,
    direction="higher",
    description="Average precision of the contexts' ranking, each context judged useful "
    "or not for reaching the reference (or, without one, the answer)",
    needs="question, contexts with text, reference or answer, a judge model",
    prompts=[CONTEXT_PRECISION],
    precheck=_precheck,
    per_model=_per_model,
)
