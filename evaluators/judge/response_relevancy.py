"""`response_relevancy` (seed 002): generate N questions from the answer alone and compare
them with the user's question by embedding cosine; evasive answers score 0.

    response_relevancy = 0                                  if every question is noncommittal
                       = max(0, mean_i cos(E(question), E(generated_i)))   otherwise

N is the option "response_relevancy.questions" (default: the judge's setting, 3; 1..10).
One request per sample and judge model generates all N questions (with a noncommittal flag
each); the embeddings come from `ctx.embedder` (`.encode(texts)` -> L2-normalised rows),
computed in a worker thread so the judge calls of other samples keep flowing.
Skipped without an answer or without an embedder.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from evaluators.judge.metric import judge_metric
from evaluators.judge.prompts.base import fence
from evaluators.judge.prompts.response_relevancy import QUESTION_GENERATION
from evaluators.registry import EvalContext
from evaluators.sample import Sample

FAMILY = "response_relevancy"
OPTION = "response_relevancy.questions"

_ENCODE_LOCK = threading.Lock()


def relevancy(
    question_vec: np.ndarray, generated: np.ndarray, noncommittal: Sequence[int]
) -> float:
    """The formula above on normalised embedding rows."""
    if all(noncommittal):
        return 0.0
    cosines = generated @ question_vec
    return max(0.0, float(np.mean(cosines)))


def _n_questions(judge: Any, ctx: EvalContext) -> int:
    default = getattr(getattr(judge, "config", None), "response_relevancy_questions", 3)
    n = int(ctx.options.get(OPTION, default))
    if not 1 <= n <= 10:
        raise ValueError(f"{OPTION} must be in 1..10, not {n}")
    return n


def _precheck(sample: Sample, ctx: EvalContext) -> str | None:
    if not (sample.answer and sample.answer.strip()):
        return "no answer"
    return None if ctx.embedder is not None else "no embedder configured"


def _encode(embedder: Any, texts: list[str]) -> np.ndarray:
    with _ENCODE_LOCK:  # one model, one forward pass at a time
        return np.asarray(embedder.encode(texts), dtype=np.float32)


async def _per_model(judge: Any, model: str, sample: Sample, ctx: EvalContext) -> float:
    n = _n_questions(judge, ctx)
    user = f"Write exactly {n} questions.\n\n{fence('answer', sample.answer or '')}"
    data = await judge.ask(
        QUESTION_GENERATION, user, model=model, metric=FAMILY, trace_id=sample.trace_id
    )
    rows = data["questions"][:n]
    flags = [int(r["noncommittal"]) for r in rows]
    if all(flags):
        return 0.0
    vectors = await asyncio.to_thread(
        _encode, ctx.embedder, [sample.question, *(str(r["question"]) for r in rows)]
    )
    return relevancy(vectors[0], vectors[1:], flags)


SPEC = judge_metric(
    FAMILY,
    description="Mean cosine similarity between the question and questions generated "
    "from the answer (0 for evasive answers)",
    needs="question, answer, a judge model, an embedder",
    prompts=[QUESTION_GENERATION],
    precheck=_precheck,
    per_model=_per_model,
    uses_embedder=True,
)
