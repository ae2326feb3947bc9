"""The knowledge-gap list: signals per topic with their intervals, the ranking score, and
the "I don't know" answers in English and Russian."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from evaluators.aggregate import t_interval, wilson_interval
from evaluators.topics.gaps import FAIL_BELOW, GapTally, rank_gaps
from evaluators.topics.no_answer import says_no_answer


def test_t_interval_matches_scipy() -> None:
    values = np.array([0.2, 0.9, 0.4, 0.7, 0.55, 0.1])
    low, high = t_interval(len(values), float(values.sum()), float((values**2).sum()))
    ref = stats.t.interval(0.95, len(values) - 1, loc=values.mean(), scale=stats.sem(values))
    assert (low, high) == pytest.approx(ref, rel=1e-9)
    assert t_interval(1, 0.3, 0.09) == (0.3, 0.3)


def test_ranking_puts_the_surest_largest_failures_first() -> None:
    tally = GapTally()
    # topic 1: 200 traces, 40 with an empty retrieval; topic 2: 2 traces, both failed;
    # topic 3: 300 traces, none failed
    for i in range(200):
        tally.add(1, {"retrieval_empty_rate": float(i < 40)}, f"card delivery {i % 5}")
    for _ in range(2):
        tally.add(2, {"retrieval_empty_rate": 1.0, "no_answer_rate": 1.0}, "rare")
    for _ in range(300):
        tally.add(3, {"retrieval_empty_rate": 0.0, "hit_rate@5": 1.0}, "balance")
    gaps = tally.gaps()
    assert [g.topic for g in gaps] == [1, 2, 3]
    first = gaps[0]
    low, high = wilson_interval(40, 200)
    assert (first.failure_rate, first.lower, first.upper) == pytest.approx((0.2, low, high))
    assert first.score == pytest.approx(200 * low)
    assert first.expected_failed == pytest.approx(40)
    assert first.examples[0].startswith("card delivery")
    assert gaps[1].failure_rate == 1.0 and gaps[1].score < first.score
    assert gaps[2].failed == 0 and gaps[2].score == pytest.approx(0.0, abs=1e-9)


def test_a_trace_counts_once_however_many_signals_it_fails() -> None:
    tally = GapTally()
    tally.add(0, {"retrieval_empty_rate": 1.0, "no_answer_rate": 1.0, "faithfulness": 0.1})
    tally.add(0, {"context_relevance": 0.9, "faithfulness": 0.8})
    tally.add(0, {"unknown_metric": 0.0, "faithfulness": math.nan})  # measured nothing
    (gap,) = tally.gaps()
    assert (gap.volume, gap.measured, gap.failed) == (3, 2, 1)
    faith = gap.signals["faithfulness"]
    assert faith.n == 2 and faith.value == pytest.approx(0.45) and faith.failed == 1
    assert gap.signals["retrieval_empty_rate"].lower == pytest.approx(wilson_interval(1, 1)[0])


def test_hit_rate_fails_on_a_miss_and_judge_scores_below_the_threshold() -> None:
    gaps = rank_gaps(
        [
            (5, {"hit_rate@5": 0.0}, "a"),
            (5, {"hit_rate@5": 1.0}, "b"),
            (5, {"context_relevance": FAIL_BELOW - 0.01}, "c"),
            (5, {"context_relevance": FAIL_BELOW}, "d"),
        ]
    )
    assert gaps[0].failed == 2
    assert gaps[0].examples[:2] == ("a", "c")  # failed traces' questions first


@pytest.mark.parametrize(
    "answer",
    [
        "I don't know the answer to that.",
        "I’m not sure — the documents do not mention card limits.",
        "Sorry, I couldn't find anything about this.",
        "The provided context does not contain information about refunds.",
        "Unfortunately there is no information about it.",
        "Я не знаю.",
        "К сожалению, я не нашёл информации о доставке карты.",
        "Не могу ответить на этот вопрос.",
        "В документах нет информации о лимитах.",
        "Информации об этом нет в базе знаний.",
        "Контекст не содержит ответа на вопрос.",
    ],
)
def test_no_answer_phrasings(answer: str) -> None:
    assert says_no_answer(answer)


@pytest.mark.parametrize(
    "answer",
    [
        "Your card will be delivered in 5 working days.",
        "No, the fee is not charged for transfers under 100 EUR.",
        "Карта будет доставлена в течение пяти дней.",
        "Нет, комиссия не взимается.",
        "I know this: the limit is 1,000 EUR a day.",
        "",
        None,
    ],
)
def test_answers_that_answer(answer: str | None) -> None:
    assert not says_no_answer(answer)
