"""ROUGE-1, ROUGE-2 and ROUGE-L F-measures, as the `rouge-score` package computes them.

With T the reference (target) tokens and A the answer (prediction) tokens (`words`):

    ROUGE-N:  overlap = sum_g min(count_T(g), count_A(g)) over the n-grams g of T
              P = overlap / max(#n-grams of A, 1),  R = overlap / max(#n-grams of T, 1)
    ROUGE-L:  P = LCS(T, A) / |A|,  R = LCS(T, A) / |T|   (0 when either is empty)
    F = 2 P R / (P + R), and 0 when P + R = 0.

An empty answer or reference is a real score (0.0, as rouge-score returns); a missing one
is skipped. The LCS length uses the bit-parallel algorithm (Allison & Dix 1986, Hyyrö
2004): one big-integer update per answer token instead of a |T| x |A| table.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

from evaluators.outcome import Outcome
from evaluators.registry import EvalContext, MetricSpec, register
from evaluators.sample import Sample
from evaluators.text.pairs import pair_outcomes
from evaluators.text.words import words


class RougeF(NamedTuple):
    rouge1: float
    rouge2: float
    rougeL: float


def f_measure(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def ngram_f(target: Sequence[str], prediction: Sequence[str], n: int) -> float:
    """ROUGE-N F-measure of two token sequences."""
    if n == 1:
        target_grams: Counter[object] = Counter(target)
        prediction_grams: Counter[object] = Counter(prediction)
    else:
        target_grams = Counter(zip(*(target[i:] for i in range(n)), strict=False))
        prediction_grams = Counter(zip(*(prediction[i:] for i in range(n)), strict=False))
    overlap = sum(min(count, prediction_grams[g]) for g, count in target_grams.items())
    precision = overlap / max(max(len(prediction) - n + 1, 0), 1)
    recall = overlap / max(max(len(target) - n + 1, 0), 1)
    return f_measure(precision, recall)


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token sequences (bit-parallel)."""
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return 0
    masks: dict[str, int] = {}
    for i, token in enumerate(a):
        masks[token] = masks.get(token, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for token in b:
        u = v & masks.get(token, 0)
        v = ((v + u) | (v - u)) & full
    return len(a) - v.bit_count()


def lcs_f(target: Sequence[str], prediction: Sequence[str]) -> float:
    """ROUGE-L F-measure of two token sequences."""
    if not target or not prediction:
        return 0.0
    lcs = lcs_length(target, prediction)
    return f_measure(lcs / len(prediction), lcs / len(target))


@lru_cache(maxsize=1 << 14)
def rouge(reference: str, answer: str) -> RougeF:
    """All three F-measures of one pair (cached: the three metrics are asked separately)."""
    target, prediction = words(reference), words(answer)
    return RougeF(
        ngram_f(target, prediction, 1), ngram_f(target, prediction, 2), lcs_f(target, prediction)
    )


def _rouge1(samples: Sequence[Sample], ctx: EvalContext, k: int | None) -> list[Outcome]:
    return pair_outcomes(samples, lambda ref, ans: rouge(ref, ans).rouge1)


def _rouge2(samples: Sequence[Sample], ctx: EvalContext, k: int | None) -> list[Outcome]:
    return pair_outcomes(samples, lambda ref, ans: rouge(ref, ans).rouge2)


def _rougeL(samples: Sequence[Sample], ctx: EvalContext, k: int | None) -> list[Outcome]:
    return pair_outcomes(samples, lambda ref, ans: rouge(ref, ans).rougeL)


for _family, _compute, _what in (
    ("rouge1_f", _rouge1, "unigram"),
    ("rouge2_f", _rouge2, "bigram"),
    ("rougeL_f", _rougeL, "longest-common-subsequence"),
):
    register(
        MetricSpec(
            family=_family,
            kind="per_sample",
            compute=_compute,
            needs="answer + reference",
            description=f"ROUGE {_what} F-measure of the answer against the reference.",
            direction="higher",
            unit="score",
        )
    )
