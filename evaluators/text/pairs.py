"""Per-sample glue of the answer-vs-reference metrics: score a pair, or say why not."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from evaluators.outcome import Outcome, Score, Skipped
from evaluators.sample import Sample

NO_REFERENCE = Skipped("no reference")
NO_ANSWER = Skipped("no answer")


def pair_outcomes(samples: Sequence[Sample], score: Callable[[str, str], float]) -> list[Outcome]:
    """`Score(score(reference, answer))` per sample; a missing text is `Skipped`.

    An empty string is a text (it scores 0); only `None` means missing.
    """
    result: list[Outcome] = []
    for sample in samples:
        if sample.reference is None:
            result.append(NO_REFERENCE)
        elif sample.answer is None:
            result.append(NO_ANSWER)
        else:
            result.append(Score(score(sample.reference, sample.answer)))
    return result
