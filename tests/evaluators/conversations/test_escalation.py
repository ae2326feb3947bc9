"""Asking for a person, in Russian and English, negated or not, or tagged."""

from __future__ import annotations

import pytest

from evaluators.conversations import is_escalation

ASKS = [
    "позовите оператора",
    "Оператор!!!",
    "оператооор",
    "аператор пожалуйста",
    "соедините с живым человеком",
    "Хочу поговорить с менеджером",
    "переключите на специалиста",
    "нет, соедините с сотрудником",
    "не понимаю, оператора позовите",
    "talk to a human",
    "agent please",
    "Can I speak with a real person?",
    "operater please",
    "why can't I talk to a human?",
    "escalate this",
    "I want a human, not a bot",
    "можно мне operator?",
    "дай оператора",
    "support!",
    "мне бы с живым пообщаться",
    "есть кто живой?",
    "оператора в чат",
    "хватит, зовите человека",
    "Please transfer me to a live agent",
    "let me talk to someone",
    "можно мне с кем-нибудь из HR поговорить?",
    "Здравствуйте, можно ли соединить с сотрудником банка?",
    "I need to talk to a person about sending money",
    "хочу поговорить с человеком насчёт перевода денег",
]
NOT_ASKS = [
    "I don't need an operator",
    "Я не хочу говорить с оператором",
    "без оператора можно оформить?",
    "I talked to an agent yesterday and he said the fee is 5%",
    "Оператор вчера сказал, что карта готова",
    "Какой оператор связи нужен для SMS?",
    "Do I need to talk to my manager to approve leave?",
    "Нужно ли звонить оператору, чтобы закрыть счёт?",
    "How long is delivery to Moscow?",
    "Да, оператор вчера сказал, что карта готова",
    "Операторы говорят, что карта готова",
    "support SBP?",
    "Карта ещё жива?",
    "я звонил оператору вчера",
    "Does your app support Apple Pay?",
    "operator fees?",
    "No need for a human, how do I track my order?",
    "How do I get a certificate of employment?",
    "Хочу отправить деньги человеку, у которого карта другого банка",
    "I want to send money to a person",
]


@pytest.mark.parametrize("question", ASKS)
def test_asks_for_a_person(question: str) -> None:
    assert is_escalation(question, {})


@pytest.mark.parametrize("question", NOT_ASKS)
def test_does_not_ask_for_a_person(question: str) -> None:
    assert not is_escalation(question, {})


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, True),
        (1, True),
        ("true", True),
        ("yes", True),
        (False, False),
        ("false", False),
        ("0", False),
        (None, False),
    ],
)
def test_the_application_tag(value: object, expected: bool) -> None:
    assert is_escalation("What is the fee?", {"escalated": value}) is expected
