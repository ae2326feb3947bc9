"""Re-asks: a later question of the session that asks an earlier one again in other words.

Two questions are a re-ask pair when the cosine of their embeddings is above the embedding
model's calibrated paraphrase threshold (the one the semantic cache uses) and the later one
is not a follow-up about something else. Embeddings alone confuse the two: "how long is
delivery to Moscow?" and "how long is delivery to Kazan?" share all but one word and sit
closer than many true paraphrases. So the content words (`evaluators.conversations.words`:
stemmed, stop and courtesy words dropped; one typo forgiven in words of five letters or
more) decide what the cosine cannot:

- a substitution: each question has a content word the other lacks, and their word
  sequences (all words, stemmed) still align to a similarity of at least
  `SUBSTITUTION_OVERLAP` (difflib's ratio: the template kept, the entity swapped)
  -> a follow-up;
- an ellipsis: the later question has under half the earlier one's content words and
  brings one of its own ("а в Казань?", "and for business accounts?") -> a follow-up;
- a question without content words ("спасибо!", "ok?") is nobody's re-ask.

A paraphrase rewords the question (little shared vocabulary, or the same words again), so
it passes both rules. Asking for a person twice is counted as escalation, not as a re-ask.
The figures behind the constants: benchmarks/conversations.py, benchmarks/RESULTS.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher

import numpy as np

from evaluators.conversations.words import content_stems, stem, tokens

SUBSTITUTION_OVERLAP = 0.7
ELLIPSIS_SHARE = 0.5
TYPO_MIN_LENGTH = 5


def _same(a: str, b: str) -> bool:
    if a == b:
        return True
    if min(len(a), len(b)) < TYPO_MIN_LENGTH or abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    return a[i + 1 :] == b[i + 1 :] if len(a) == len(b) else a[i:] == b[i + 1 :]


def _unmatched(words: frozenset[str], other: frozenset[str]) -> frozenset[str]:
    return frozenset(w for w in words if not any(_same(w, o) for o in other))


def template_similarity(earlier: str, later: str) -> float:
    """How much of the two questions' stemmed word sequences align (difflib ratio, 0-1)."""
    a = [stem(t) for t in tokens(earlier)]
    b = [stem(t) for t in tokens(later)]
    return SequenceMatcher(None, a, b, autojunk=False).ratio()


def is_follow_up(earlier: str, later: str) -> bool:
    """Is `later` a question about something else than `earlier` (not a re-ask), by the
    content-word rules above? True also when either has no content words."""
    a, b = frozenset(content_stems(earlier)), frozenset(content_stems(later))
    if not a or not b:
        return True
    only_a, only_b = _unmatched(a, b), _unmatched(b, a)
    if only_a and only_b and template_similarity(earlier, later) >= SUBSTITUTION_OVERLAP:
        return True
    return bool(only_b) and len(b) < ELLIPSIS_SHARE * len(a)


def re_ask_pairs(
    questions: Sequence[str],
    embeddings: np.ndarray,
    threshold: float,
    skip: Sequence[bool] | None = None,
) -> list[tuple[int, int]]:
    """(earlier, later) index pairs where question `later` re-asks question `earlier`:
    cosine above `threshold` (rows are unit-norm) and not a follow-up. Questions with
    `skip` set (escalation requests) take part in no pair."""
    n = len(questions)
    if n < 2:
        return []
    sims = embeddings @ embeddings.T
    pairs = []
    for j in range(1, n):
        for i in range(j):
            if skip is not None and (skip[i] or skip[j]):
                continue
            if sims[i, j] > threshold and not is_follow_up(questions[i], questions[j]):
                pairs.append((i, j))
    return pairs
