"""The fitted re-ask decision: what moves it, and where it now draws the line."""

from __future__ import annotations

import pytest

from evaluators.conversations import is_re_ask, outcome_signature
from evaluators.conversations.decision import (
    DECISION,
    WEIGHTS,
    PairSignals,
    ReaskWeights,
    re_ask_probability,
)
from evaluators.conversations.reask import pair_signals

TAU = 0.71


def test_the_probability_grows_with_the_margin_and_the_same_kind() -> None:
    low = re_ask_probability(PairSignals(margin=-1.0, same_kind=False))
    high = re_ask_probability(PairSignals(margin=0.5, same_kind=False))
    assert 0.0 < low < high < 1.0
    assert re_ask_probability(PairSignals(margin=-1.0, same_kind=True)) > low


def test_the_probability_stays_finite_far_out() -> None:
    steep = ReaskWeights(intercept=0.0, margin=1.0, same_kind=0.0)
    assert re_ask_probability(PairSignals(margin=-1e4, same_kind=False), steep) == 0.0
    assert re_ask_probability(PairSignals(margin=1e4, same_kind=False), steep) == 1.0


def test_the_margin_is_in_units_of_the_gap_to_one() -> None:
    s = pair_signals("What is the daily limit?", "What's the limit per day?", 0.855, TAU)
    assert s.margin == pytest.approx(0.5)
    assert not s.same_kind  # neither has a kind


def test_a_paraphrase_in_other_words_below_tau_is_a_re_ask() -> None:
    # both ask how to: the decision takes a same-kind pair well under τ (0.5 here)
    earlier, later = "How do I reset my password?", "I forgot my password, what should I do?"
    assert pair_signals(earlier, later, 0.5, TAU).same_kind
    assert is_re_ask(earlier, later, cosine=0.5, threshold=TAU)
    assert not is_re_ask(earlier, later, cosine=0.2, threshold=TAU)


def test_without_a_shared_kind_the_bar_sits_higher() -> None:
    earlier, later = "What is the daily ATM withdrawal limit?", "What's the cap on ATM cash?"
    assert not is_re_ask(earlier, later, cosine=0.5, threshold=TAU)
    assert is_re_ask(earlier, later, cosine=0.7, threshold=TAU)


def test_the_shipped_weights_put_tau_above_the_decision() -> None:
    # a pair at τ with nothing else known is a re-ask: the fit lowered the bar, not raised it
    assert re_ask_probability(PairSignals(margin=0.0, same_kind=False), WEIGHTS) > DECISION


def test_the_signature_names_the_threshold_and_the_decision() -> None:
    sign = str(outcome_signature({}, "use-multilingual-v3"))
    assert "cache=0.71(cal)" in sign
    assert ",reask=lr:" in sign
    assert str(outcome_signature({"cache_similarity_threshold": 0.8}, None)).count("reask=") == 1


def test_the_decision_reads_the_weights_it_is_given() -> None:
    earlier, later = "How do I reset my password?", "I forgot my password, what should I do?"
    never = ReaskWeights(intercept=-100.0, margin=0.0, same_kind=0.0)
    assert is_re_ask(earlier, later, cosine=0.5, threshold=TAU)
    assert not is_re_ask(earlier, later, cosine=0.5, threshold=TAU, weights=never)
