"""Re-asks: a later question of the session that asks an earlier one again in other words.

The stored embeddings' cosine, read against the embedding model's calibrated paraphrase
threshold τ (the one the semantic cache uses), is one signal; alone it confuses re-asks
with follow-ups ("how long is delivery to Moscow?" and "... to Kazan?" sit closer than
many true paraphrases) and misses paraphrases in other words. The content words
(`evaluators.conversations.words`: stemmed, stop and courtesy words dropped; two stems of
five letters or more match despite one typo or when one extends the other) give the others:

- a follow-up (`is_follow_up`):
  - another kind of question on the same subject: "how do I request parental leave?"
    then "how long is it?" (`evaluators.conversations.kinds`);
  - a template edit: the content words differ (an entity swapped, a detail added: "can I
    pay by card?" -> "... on delivery?") while the stemmed word sequences still align to
    difflib's ratio >= `template` (a paraphrase rewords, so its sequence aligns less);
  - an ellipsis: the later question has under `ellipsis` of the earlier one's content
    words and brings one of its own ("а в Казань?", "and for business accounts?");
  - a message without content words ("спасибо!", "ok?");
- the same content words again (the question repeated, even in capitals, which the
  embedding model reads as other words);
- the same kind of question;
- the pair's cosine bar, lowered to τ - k(1 - τ) (the gap to 1 scaled so it carries across
  models) when the later question says it is asking again ("still", "again", "doesn't
  work", "ещё раз", "до сих пор", "не помогло": k = `marker`), or when the two are in
  different scripts (cross-lingual cosines run lower, k = `cross_script`).
`is_re_ask`: a follow-up never is, the same words again always are (at any cosine); the
other signals are weighed by the fitted logistic decision of
`evaluators.conversations.decision`. Asking for a person twice is escalation, not a re-ask
(the caller skips those turns). The rule's constants were chosen on the dev split of
benchmarks/data/conversations_ru_en.jsonl (`python -m benchmarks.conversations --sweep`);
the held-out figures are in RESULTS.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache

import numpy as np

from evaluators.conversations.decision import (
    DECISION,
    WEIGHTS,
    PairSignals,
    ReaskWeights,
    re_ask_probability,
)
from evaluators.conversations.kinds import question_kind
from evaluators.conversations.words import (
    COURTESY,
    content_stems,
    normalise,
    one_edit,
    stem,
    tokens,
)
from evaluators.scripts import dominant_script

TYPO_MIN_LENGTH = 5
_MARKERS = re.compile(
    r"\b(?:still|again|once more|didn't help|did not help|doesn't work|does not work|"
    r"didn't work|not working|isn't working|you didn't answer|i asked|already asked|"
    r"not what i asked|ещ[её] раз|опять|снова|до сих пор|вс[её] равно|не помогл|"
    r"не работает|не получается|не ответил|я спрашивал|я же спрашивал|я же спросил|"
    r"так и не|повторяю)"
)


@dataclass(frozen=True)
class ReaskRule:
    """The constants of the follow-up and lowered-bar rules (see the module docstring)."""

    template: float = 0.7
    ellipsis: float = 0.5
    marker: float = 0.9
    cross_script: float = 0.35
    kinds: bool = True
    """Questions wanting different kinds of answer are follow-ups (`kinds.py`)."""


DEFAULT_RULE = ReaskRule()


@dataclass(frozen=True)
class _Question:
    """What the rules read of one question, computed once per text."""

    content: frozenset[str]
    template: tuple[str, ...]
    kind: str | None
    again: bool
    script: str | None


@lru_cache(maxsize=1 << 13)
def _question(text: str) -> _Question:
    return _Question(
        content=frozenset(content_stems(text)),
        template=tuple(stem(t) for t in tokens(text) if t not in COURTESY),
        kind=question_kind(text),
        again=_MARKERS.search(normalise(text)) is not None,
        script=dominant_script(text),
    )


def _same(a: str, b: str) -> bool:
    if a == b:
        return True
    if min(len(a), len(b)) < TYPO_MIN_LENGTH:
        return False
    # a typo, or one stem the other's derivation ("достав"-ить / "доставк"-а)
    return one_edit(a, b) or a.startswith(b) or b.startswith(a)


def _unmatched(words: frozenset[str], other: frozenset[str]) -> frozenset[str]:
    if words == other:
        return frozenset()
    return frozenset(w for w in words if w not in other and not any(_same(w, o) for o in other))


def template_similarity(earlier: str, later: str) -> float:
    """How much of the two questions' stemmed word sequences align (difflib ratio, 0-1):
    all words but the courtesy ones ("ещё раз", "please"), a later stem matching an earlier
    one (typo, derivation) read as that one."""
    a = _question(earlier).template
    b = [next((x for x in a if _same(x, y)), y) for y in _question(later).template]
    return SequenceMatcher(None, a, b, autojunk=False).ratio()


def says_again(question: str) -> bool:
    """Does the question say it is asked again ("still", "ещё раз", "не помогло")?"""
    return _question(question).again


def is_follow_up(earlier: str, later: str, rule: ReaskRule = DEFAULT_RULE) -> bool:
    """Is `later` about something else than `earlier` (never a re-ask), by the kinds,
    template and ellipsis rules? True also when either has no content words."""
    qa, qb = _question(earlier), _question(later)
    a, b = qa.content, qb.content
    if not a or not b:
        return True
    if rule.kinds and qa.kind is not None and qb.kind is not None and qa.kind != qb.kind:
        return True
    only_a, only_b = _unmatched(a, b), _unmatched(b, a)
    if (only_a or only_b) and template_similarity(earlier, later) >= rule.template:
        return True
    return bool(only_b) and len(b) < rule.ellipsis * len(a)


def same_words(earlier: str, later: str) -> bool:
    """Do the two questions have the same content words (typos forgiven)?"""
    a, b = _question(earlier).content, _question(later).content
    return bool(a) and not _unmatched(a, b) and not _unmatched(b, a)


def pair_threshold(earlier: str, later: str, threshold: float, rule: ReaskRule) -> float:
    """The cosine bar for this pair: τ, lowered by the marker or cross-script rule."""
    qa, qb = _question(earlier), _question(later)
    k = 0.0
    if qb.again:
        k = max(k, rule.marker)
    if qa.script != qb.script:
        k = max(k, rule.cross_script)
    return threshold - k * (1.0 - threshold)


def pair_signals(
    earlier: str, later: str, cosine: float, threshold: float, rule: ReaskRule = DEFAULT_RULE
) -> PairSignals:
    """What the re-ask decision (`evaluators.conversations.decision`) reads of the pair."""
    qa, qb = _question(earlier), _question(later)
    bar = pair_threshold(earlier, later, threshold, rule)
    return PairSignals(
        margin=(cosine - bar) / max(1.0 - threshold, 1e-6),
        same_kind=qa.kind is not None and qa.kind == qb.kind,
    )


def is_re_ask(
    earlier: str,
    later: str,
    cosine: float,
    threshold: float,
    rule: ReaskRule = DEFAULT_RULE,
    weights: ReaskWeights = WEIGHTS,
) -> bool:
    """Does `later` ask `earlier` again, given their embeddings' cosine and the model's τ?
    Not a follow-up, and the same words again or the fitted decision over the pair's
    signals says so (`weights`: the shipped fit; others for the benchmark's refits)."""
    if is_follow_up(earlier, later, rule):
        return False
    if same_words(earlier, later):
        return True
    signals = pair_signals(earlier, later, cosine, threshold, rule)
    return re_ask_probability(signals, weights) > DECISION


def re_ask_pairs(
    questions: Sequence[str],
    embeddings: np.ndarray,
    threshold: float,
    skip: Sequence[bool] | None = None,
    rule: ReaskRule = DEFAULT_RULE,
) -> list[tuple[int, int]]:
    """(earlier, later) index pairs where question `later` re-asks question `earlier`
    (rows of `embeddings` unit-norm, in question order). Questions with `skip` set
    (escalation requests) take part in no pair."""
    n = len(questions)
    if n < 2:
        return []
    sims = embeddings @ embeddings.T
    return [
        (i, j)
        for j in range(1, n)
        for i in range(j)
        if not (skip is not None and (skip[i] or skip[j]))
        and is_re_ask(questions[i], questions[j], float(sims[i, j]), threshold, rule)
    ]
