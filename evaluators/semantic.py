"""`semantic_similarity`: cosine similarity of the answer's and the reference's embeddings.

    semantic_similarity = cos(e_sys, e_gt) = e_sys · e_gt / (|e_sys| |e_gt|)

(seed 004, §6.4.2). Answers and references are embedded in one batch; the embedder returns
unit rows, so the cosine is a row-wise dot product. Range -1..1 (clipped for float noise).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from evaluators.outcome import Outcome, Score, Skipped
from evaluators.registry import EvalContext, MetricSpec, register
from evaluators.sample import Sample

NO_EMBEDDER = "no embedder configured"


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity of two equally shaped matrices (zero rows give 0)."""
    a64 = np.asarray(a, dtype=np.float64)
    b64 = np.asarray(b, dtype=np.float64)
    dots = np.einsum("ij,ij->i", a64, b64)
    norms = np.linalg.norm(a64, axis=1) * np.linalg.norm(b64, axis=1)
    cos = np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
    clipped: np.ndarray = np.clip(cos, -1.0, 1.0)
    return clipped


def semantic_similarity(
    samples: Sequence[Sample], ctx: EvalContext, k: int | None = None
) -> list[Outcome]:
    outcomes: list[Outcome] = []
    pairs: list[int] = []
    for i, s in enumerate(samples):
        if not s.answer:
            outcomes.append(Skipped("no answer"))
        elif not s.reference:
            outcomes.append(Skipped("no reference"))
        else:
            outcomes.append(Score(0.0))
            pairs.append(i)
    if not pairs:
        return outcomes
    if ctx.embedder is None:
        return [Skipped(NO_EMBEDDER) if isinstance(o, Score) else o for o in outcomes]
    texts = [samples[i].answer or "" for i in pairs] + [samples[i].reference or "" for i in pairs]
    emb = ctx.embedder.encode(texts)
    cos = cosine_rows(emb[: len(pairs)], emb[len(pairs) :])
    for i, value in zip(pairs, cos, strict=True):
        outcomes[i] = Score(float(value))
    return outcomes


register(
    MetricSpec(
        family="semantic_similarity",
        kind="per_sample",
        compute=semantic_similarity,
        needs="answer + reference",
        description="Cosine similarity of answer and reference embeddings (-1..1).",
        direction="higher",
        unit="cosine",
        uses_embedder=True,
    )
)
