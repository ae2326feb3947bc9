"""`response_relevancy` (seed 002): generate N questions from the answer and compare them
with the user's question by embedding cosine; evasive answers score 0.

    response_relevancy = 0                                  if every question is noncommittal
                       = max(0, mean_i cos(E(question), E(generated_i)))   otherwise

N is the option "response_relevancy.questions" (default: the judge's setting, 3; 1..10).
One request per sample and judge model generates all N questions (with a noncommittal flag
each). As seed 002 says, the generator sees the original question too ("with account of
the original question"); the judge setting `response_relevancy_with_question = False`
shows it the answer alone (RAGAS), and the prompt hash in the signature says which.
A reply with fewer than N usable questions (or empty ones) is a schema error: it gets the
client's one repair request, then the sample fails with `schema_mismatch` -- a mean over fewer
questions than asked is never reported silently. Extra questions beyond N are ignored.
The embeddings come from `ctx.embedder` (`.encode(texts)` -> L2-normalised rows),
computed in a worker thread so the judge calls of other samples keep flowing.
Skipped without an answer or without an embedder.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from evaluators.judge.errors import JudgeSchemaError
from evaluators.judge.metric import judge_metric
from evaluators.judge.prompts.base import Prompt, fence
from evaluators.judge.prompts.response_relevancy import (
    QUESTION_GENERATION,
    QUESTION_GENERATION_ANSWER_ONLY,
)
from evaluators.judge.protocol import Judge
from evaluators.judge.schemas import exactly
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


def _n_questions(judge: Judge, ctx: EvalContext) -> int:
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


def with_question(config: Any) -> bool:
    """Whether the generator sees the user's question (seed 002; the default)."""
    return bool(getattr(config, "response_relevancy_with_question", True))


def prompts_for(config: Any) -> list[Prompt]:
    return [QUESTION_GENERATION if with_question(config) else QUESTION_GENERATION_ANSWER_ONLY]


def _exactly(n: int) -> Any:
    def check(data: Any) -> list[Any]:
        rows = [r for r in data["questions"] if str(r["question"]).strip()]
        if len(rows) < n:
            raise JudgeSchemaError(
                f"{n} questions were asked for, the reply has {len(rows)} non-empty ones"
            )
        return rows[:n]

    return check


async def _per_model(judge: Judge, model: str, sample: Sample, ctx: EvalContext) -> float:
    n = _n_questions(judge, ctx)
    config = getattr(judge, "config", None)
    [prompt] = prompts_for(config)
    user = f"Write exactly {n} questions.\n\n"
    if with_question(config):
        user += f"{fence('question', sample.question)}\n\n"
    user += fence("answer", sample.answer or "")
    rows = await judge.ask(
        prompt,
        user,
        model=model,
        metric=FAMILY,
        trace_id=sample.trace_id,
        check=_exactly(n),
        schema=exactly(prompt.schema, "questions", n),
    )
    flags = [int(r["noncommittal"]) for r in rows]
    if all(flags):
        return 0.0
    vectors = await asyncio.to_thread(
        _encode, ctx.embedder, [sample.question, *(str(r["question"]) for r in rows)]
    )
    return relevancy(vectors[0], vectors[1:], flags)


SPEC = judge_metric(
    FAMILY,
    direction="higher",
    unit="cosine",
    description="Mean cosine similarity between the question and questions generated "
    "from the answer (0 for evasive answers)",
    needs="question, answer, a judge model, an embedder",
    prompts=[QUESTION_GENERATION, QUESTION_GENERATION_ANSWER_ONLY],
    prompts_for=prompts_for,
    precheck=_precheck,
    per_model=_per_model,
    uses_embedder=True,
)
