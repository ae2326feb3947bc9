"""Sentence BLEU (0..100), equal to `sacrebleu.sentence_bleu(answer, [reference],
lowercase=True)`: 13a tokens, exponential smoothing, effective order.

Both texts are lower-cased, right-stripped and tokenized (`tokenizer_13a`). With c_n and
t_n the clipped matching and total n-gram counts of the answer (n = 1..4), c = answer
length and r = reference length:

    BP  = 1 if c >= r, exp(1 - r / c) if 0 < c < r, 0 if c = 0
    p_n = 100 c_n / t_n;  where c_n = 0 the j-th such order gets 100 / (2^j t_n)
          (mteval's "exp" smoothing)
    N   = the highest order with t_n > 0 (effective order: short answers are not
          punished for lacking 4-grams)
    BLEU = BP * exp( (1/N) sum_{n<=N} ln p_n ),  and 0 when no n-gram matches at all.

The dataset value is the mean of the per-sample scores.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from evaluators.outcome import Outcome
from evaluators.registry import EvalContext, MetricSpec, register
from evaluators.sample import Sample
from evaluators.text.pairs import pair_outcomes
from evaluators.text.tokenizer_13a import tokenize_13a

MAX_ORDER = 4


def _ngrams(tokens: Sequence[str]) -> Counter[tuple[str, ...]]:
    grams: Counter[tuple[str, ...]] = Counter()
    for n in range(1, MAX_ORDER + 1):
        grams.update(zip(*(tokens[i:] for i in range(n)), strict=False))
    return grams


def bleu_from_counts(
    correct: Sequence[int], total: Sequence[int], sys_len: int, ref_len: int
) -> float:
    """BLEU from sufficient statistics (see the module docstring for the formula)."""
    bp = 1.0
    if sys_len < ref_len:
        bp = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0
    if not any(correct):
        return 0.0
    precisions = [0.0] * MAX_ORDER
    smooth = 1.0
    order = MAX_ORDER
    for n in range(1, MAX_ORDER + 1):
        if total[n - 1] == 0:
            break
        order = n
        if correct[n - 1] == 0:
            smooth *= 2
            precisions[n - 1] = 100.0 / (smooth * total[n - 1])
        else:
            precisions[n - 1] = 100.0 * correct[n - 1] / total[n - 1]
    return bp * math.exp(sum([math.log(p) for p in precisions[:order]]) / order)


def sentence_bleu(answer: str, reference: str) -> float:
    """Sentence BLEU of `answer` against one `reference`, lower-cased (0..100)."""
    hyp = tokenize_13a(answer.lower().rstrip())
    ref = tokenize_13a(reference.lower().rstrip())
    ref_grams = _ngrams(ref)
    correct = [0] * MAX_ORDER
    total = [0] * MAX_ORDER
    for gram, count in _ngrams(hyp).items():
        n = len(gram) - 1
        total[n] += count
        matched = ref_grams.get(gram)
        if matched:
            correct[n] += min(count, matched)
    return bleu_from_counts(correct, total, len(hyp), len(ref))


def compute(samples: Sequence[Sample], ctx: EvalContext, k: int | None) -> list[Outcome]:
    return pair_outcomes(samples, lambda reference, answer: sentence_bleu(answer, reference))


SPEC = register(
    MetricSpec(
        family="bleu",
        kind="per_sample",
        compute=compute,
        needs="answer + reference",
        description="Sentence BLEU (0-100) of the answer against the reference (sacrebleu 13a).",
        direction="higher",
        unit="bleu",
    )
)
