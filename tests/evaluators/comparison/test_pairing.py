"""Pairing rows of two runs by question: occurrence order for repeated questions, missing
values, and question keys for Russian and English text."""

from __future__ import annotations

import numpy as np
import pytest

from evaluators.comparison import compare_paired, pair_rows, question_key


def test_repeated_keys_pair_in_order_of_occurrence() -> None:
    a = [
        ("q1", {"hit": 1.0, "faith": 0.5}),
        ("q2", {"hit": 0.0, "faith": None}),
        ("q1", {"hit": 0.0, "faith": 0.7}),
        ("q1", {"hit": 1.0}),  # a third q1: B has two
        ("q3", {"hit": 1.0}),  # not in B
    ]
    b = [
        ("q1", {"hit": 0.0, "faith": 0.9}),
        ("q4", {"hit": 1.0}),  # not in A
        ("q2", {"hit": 1.0, "faith": 0.4}),
        ("q1", {"hit": 1.0, "faith": 0.6}),
    ]
    p = pair_rows(a, b, ["hit", "faith"])
    assert p.keys == ("q1", "q2", "q1")  # A's order
    np.testing.assert_array_equal(p.a, [[1.0, 0.5], [0.0, 0.0], [0.0, 0.7]])
    np.testing.assert_array_equal(p.b, [[0.0, 0.9], [1.0, 0.0], [1.0, 0.6]])
    np.testing.assert_array_equal(p.valid, [[True, True], [True, False], [True, True]])
    assert (p.unmatched_a, p.unmatched_b) == (2, 1)
    assert p.metrics == ("hit", "faith")


def test_paired_rows_feed_compare() -> None:
    a = [(f"q{i}", {"hit": float(i % 2), "faith": None if i == 3 else 0.5}) for i in range(8)]
    b = [(f"q{i}", {"hit": 1.0, "faith": 0.6}) for i in reversed(range(8))]
    p = pair_rows(a, b, ["hit", "faith"])
    c = compare_paired(p.a, p.b, p.metrics, valid=p.valid, resamples=1_000)
    hit, faith = c.metrics
    assert (hit.n, hit.wins, hit.ties, hit.losses) == (8, 4, 4, 0)
    assert faith.n == 7 and faith.diff == pytest.approx(0.1)


def test_non_finite_values_are_refused() -> None:
    with pytest.raises(ValueError, match="'q1' has a non-finite hit"):
        pair_rows([("q1", {"hit": float("nan")})], [("q1", {"hit": 1.0})], ["hit"])
    with pytest.raises(ValueError, match="distinct"):
        pair_rows([], [], ["hit", "hit"])


def test_question_keys_normalise_case_space_and_unicode_forms() -> None:
    russian = "Как  настроить\u00a0VPN  на Ubuntu?\n"
    assert question_key(russian) == "как настроить vpn на ubuntu?"
    assert question_key("  КАК НАСТРОИТЬ vpn НА ubuntu?") == question_key(russian)
    assert question_key("Что такое Ёлка?") == question_key("что такое ёлка?")
    decomposed = "Что такое е\u0308лка?"  # е + combining diaeresis = ё after NFKC
    assert question_key(decomposed) == question_key("что такое ёлка?")
    assert question_key("что такое елка?") != question_key("что такое ёлка?")  # distinct letters
    assert question_key("What is ＲＡＧ?") == "what is rag?"  # full-width letters
    assert question_key("Straße") == question_key("STRASSE")  # casefold, not lower
    assert question_key("What is RAG?") != question_key("What is RAG")  # punctuation stays


def test_keys_pair_rows_across_spellings() -> None:
    a = [(question_key("Как сбросить пароль?"), {"hit": 0.0})]
    b = [(question_key("как  сбросить пароль?"), {"hit": 1.0})]
    p = pair_rows(a, b, ["hit"])
    assert p.keys == ("как сбросить пароль?",) and p.unmatched_a == p.unmatched_b == 0
