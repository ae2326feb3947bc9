"""c-TF-IDF keywords per language, Russian stemmed."""

from __future__ import annotations

import numpy as np
import pytest

from evaluators.topics import topic_keywords
from evaluators.topics.labels import class_tfidf, language


def test_class_tfidf_formula() -> None:
    counts = np.array([[3, 1, 0], [0, 1, 2]])
    # A = 7 words / 2 topics = 3.5; f = (3, 2, 2)
    expected = counts * np.log1p(3.5 / np.array([3, 2, 2]))
    assert np.allclose(class_tfidf(counts), expected)


def test_language_by_script() -> None:
    assert language("Где моя карта?") == "ru"
    assert language("Where is my card?") == "en"
    assert language("как сделать refund") == "ru"
    assert language("12345") is None


def test_keywords_per_language_with_russian_inflections_as_one_word() -> None:
    texts = [
        "Где моя карта?",
        "Не пришла карта",
        "Заблокируйте карту",
        "Потерял карты",
        "Where is my card?",
        "My card did not arrive",
        "Как оформить отпуск?",
        "Сколько дней отпуска осталось",
        "How do I request vacation?",
        "vacation days left",
    ]
    labels = np.array([0, 0, 0, 0, 0, 0, 1, 1, 1, 1])
    got = topic_keywords(texts, labels, top=2)
    assert [label.topic for label in got] == [0, 1]
    assert got[0].keywords["ru"][0] == "карта"  # карта, карту, карты: one stem, 4 times
    assert got[0].keywords["en"][0] == "card"
    assert got[1].keywords["ru"][0] in ("отпуск", "отпуска")
    assert got[1].keywords["en"][0] == "vacation"
    assert got[0].text(1) == "card / карта"


def test_stop_words_and_unassigned_rows_are_left_out() -> None:
    got = topic_keywords(["what is the refund", "the refund please", "noise"], np.array([0, 0, -1]))
    assert got[0].keywords["en"] == ("refund",)
    assert "ru" not in got[0].keywords


def test_mismatched_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="texts for"):
        topic_keywords(["a"], np.array([0, 1]))
