"""Re-asks against follow-ups: the content-word rules, the lowered bars, the real embedder."""

from __future__ import annotations

import numpy as np
import pytest

from evaluators.conversations import ReaskRule, Turn, is_follow_up, is_re_ask, session_outcome
from evaluators.conversations.kinds import question_kind
from evaluators.conversations.reask import pair_threshold, same_words, says_again
from evaluators.embedder import Embedder
from evaluators.thresholds import similarity_threshold

TAU = 0.71


@pytest.mark.parametrize(
    ("earlier", "later"),
    [
        ("How long is delivery to Moscow?", "How long is delivery to Kazan?"),
        ("Сколько стоит доставка в Москву?", "Ещё раз: сколько стоит доставить в Казань?"),
        ("Can I pay by card?", "Can I pay by card on delivery?"),
        ("Сколько стоит доставка в Москву?", "а в Казань?"),
        ("How do I request parental leave?", "How long is parental leave?"),
        ("How long is parental leave?", "Is parental leave paid?"),
        ("спасибо", "спасибо!"),
    ],
)
def test_follow_ups(earlier: str, later: str) -> None:
    assert is_follow_up(earlier, later)
    assert not is_re_ask(earlier, later, cosine=0.95, threshold=TAU)


@pytest.mark.parametrize(
    ("earlier", "later"),
    [
        ("How do I reset my password?", "I forgot my password, what should I do?"),
        ("как поменять пин код", "как сменить пинкод на карте??"),
        ("Как сбросить пароль от приложения?", "how do I reset the app password?"),
    ],
)
def test_paraphrases_are_no_follow_ups(earlier: str, later: str) -> None:
    assert not is_follow_up(earlier, later)
    assert is_re_ask(earlier, later, cosine=0.8, threshold=TAU)
    assert not is_re_ask(earlier, later, cosine=0.3, threshold=TAU)


def test_the_same_words_again_at_any_cosine() -> None:
    # the embedding model reads capitals as other words: cos 0.35 on the real model
    assert same_words("как отменить заказ", "КАК ОТМЕНИТЬ ЗАКАЗ")
    assert is_re_ask("как отменить заказ", "КАК ОТМЕНИТЬ ЗАКАЗ", cosine=0.35, threshold=TAU)
    assert not same_words("как отменить заказ", "как отменить подписку")


def test_the_bar_is_lowered_when_the_user_says_again_or_switches_script() -> None:
    rule = ReaskRule()
    assert says_again("не работает, как изменить пин?")
    assert says_again("My order still hasn't arrived")
    assert not says_again("How do I change my PIN?")
    plain = pair_threshold("How do I change my PIN?", "How can I change the PIN code?", TAU, rule)
    again = pair_threshold("How do I change my PIN?", "it still doesn't work, PIN?", TAU, rule)
    cross = pair_threshold("How do I change my PIN?", "как поменять пин?", TAU, rule)
    assert plain == TAU
    assert again == pytest.approx(TAU - rule.marker * (1 - TAU))
    assert cross == pytest.approx(TAU - rule.cross_script * (1 - TAU))
    off = ReaskRule(marker=0.0, cross_script=0.0)
    assert pair_threshold("How do I change my PIN?", "как поменять пин?", TAU, off) == TAU


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How long is parental leave?", "duration"),
        ("сколько идет перевод SWIFT?", "duration"),
        ("Сколько стоит доставка?", "price"),
        ("Когда придет карта?", "time"),
        ("За что с меня взяли плату?", "reason"),
        ("Можно ли изменить адрес доставки?", "howto"),
        ("Заказ до сих пор не пришел, где он?", "howto"),
        ("Is parental leave paid?", "yes_no"),
        ("What is the daily limit?", None),
    ],
)
def test_question_kinds(question: str, kind: str | None) -> None:
    assert question_kind(question) == kind


def _outcome(embedder: Embedder, *questions: str) -> list[bool]:
    rows = np.asarray(embedder.encode(list(questions)), dtype=np.float64)
    thr = similarity_threshold({}, "cache_similarity_threshold", embedder.model_name)
    turns = [Turn(f"t{i}", q, "an answer", float(i), {}) for i, q in enumerate(questions)]
    return [t.re_asked for t in session_outcome(turns, rows, thr).turns]


def test_with_the_default_embedder(embedder: Embedder) -> None:
    assert _outcome(embedder, "Сколько стоит доставка в Москву?", "а в Казань?") == [False, False]
    assert _outcome(
        embedder, "How long does delivery to Berlin take?", "How long does delivery to Munich take?"
    ) == [False, False]
    assert _outcome(
        embedder, "Why was I charged an overdraft fee?", "Why did you charge me for overdraft???"
    ) == [True, False]
    assert _outcome(
        embedder, "How long does a SWIFT transfer take?", "сколько идет перевод SWIFT?"
    ) == [True, False]
