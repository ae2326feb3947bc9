"""The re-ask decision: the word rules' veto and verdict, else a logistic score.

A hard cosine bar missed most paraphrases in other words ("what is the daily ATM
withdrawal limit?" -> "how much cash can I take out per day?" sits at 0.55 for
use-multilingual-v3, τ = 0.71), and a lower bar alone takes another question on the same
subject for a re-ask. A follow-up (`reask.is_follow_up`: another kind of question, a
template edit, an ellipsis, no content words) is never a re-ask, however close the
embeddings (an entity swapped sits at 0.9); the same content words again (the question
repeated, even in capitals, which the embedding model reads as other words: cos 0.27) always
is. For the other pairs the decision weighs two signals of the pair (earlier, later):

- `margin`: the cosine's distance above the pair's bar (`reask.pair_threshold`: τ, lowered
  for "again"-markers and cross-script pairs) in units of 1 - τ, so it carries across
  models whose calibrated τ differ;
- `same_kind`: both questions want the same kind of answer (`kinds.question_kind`).

The weights are a logistic regression fitted on the dev split's pairs that are neither
follow-ups nor the same words again in
benchmarks/data/conversations_ru_en.jsonl with the default embedder
(`python -m benchmarks.reask_fit` prints them). They serve every model: the margin is in
units of 1 - τ, and a refit on multilingual-e5-small-q4's dev pairs did no better there.
A pair is a re-ask when its probability is above `DECISION` (fixed at 0.5 before the fit,
not tuned). Held-out figures: RESULTS.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

FEATURES = ("margin", "same_kind")
DECISION = 0.5


@dataclass(frozen=True)
class ReaskWeights:
    """Logistic weights of the re-ask decision, one per name in `FEATURES`."""

    intercept: float
    margin: float
    same_kind: float


# fitted by `python -m benchmarks.reask_fit` (dev split, C = 1), 2026-11-28
WEIGHTS = ReaskWeights(
    intercept=0.4816,
    margin=1.8386,
    same_kind=0.8729,
)


@dataclass(frozen=True)
class PairSignals:
    """What the decision reads of one pair of questions."""

    margin: float
    same_kind: bool

    def vector(self) -> tuple[float, ...]:
        """The signals in `FEATURES` order, booleans as 0/1."""
        return (self.margin, float(self.same_kind))


def re_ask_probability(signals: PairSignals, weights: ReaskWeights = WEIGHTS) -> float:
    """The fitted probability that the pair is a re-ask."""
    z = weights.intercept + sum(
        getattr(weights, name) * value
        for name, value in zip(FEATURES, signals.vector(), strict=True)
    )
    # the logistic function, written to stay finite for any z
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)
