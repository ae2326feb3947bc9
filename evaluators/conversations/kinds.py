"""What kind of answer a question wants: how to, how long, how much, when, why, who, yes/no.

Two questions on one subject that want different kinds of answer are a follow-up, not a
re-ask: "how do I request parental leave?" then "how long is parental leave?" then "is
parental leave paid?" share their words and sit close in embedding space, yet each wants
something new. The kind is read from the earliest interrogative phrase of the question
(English and Russian), the more specific phrase first where two start at one word ("how
long" before "how"); a question with none (a statement, "what is the limit?") has no kind
and never vetoes. "Can I ...", "можно ..." and "where ..." ask how to do something, as
"how do I ..." does ("can I change the address?" = "how do I change the address?").
"""

from __future__ import annotations

import re

from evaluators.conversations.words import normalise

_KINDS = (
    (
        "duration",
        r"how long|how many (?:days|weeks|hours)|как долго|сколько (?:времени|идет|"
        r"ждать|займет|дней|недель|часов)",
    ),
    (
        "price",
        r"how much|what does \w+(?: \w+)? cost|сколько стоит|какая (?:цена|стоимость|"
        r"комиссия)|what(?: is|'s) the (?:price|cost|fee)",
    ),
    ("time", r"when|what date|what time|когда|в какой день"),
    ("reason", r"why|почему|за что|отчего|зачем"),
    ("person", r"who|кто"),
    (
        "howto",
        r"how (?:do|can|to|should|could)|how\b|как\b|what should i do|что делать|where|"
        r"где|куда|can i|could i|may i|можно|как мне",
    ),
    ("yes_no", r"^(?:is|are|do|does|did|will|was|were|have|has)\b|есть ли|\bли\b"),
)
_PATTERN = re.compile(
    "|".join(
        f"(?P<{name}>\\b(?:{body}))" if not body.startswith("^") else f"(?P<{name}>{body})"
        for name, body in _KINDS
    )
)


def question_kind(question: str) -> str | None:
    """The kind of answer `question` wants (see the module docstring), None when unknown."""
    found = _PATTERN.search(normalise(question).strip())
    return found.lastgroup if found is not None else None


def different_kinds(earlier: str, later: str) -> bool:
    """Do both questions have a kind, and different ones?"""
    a, b = question_kind(earlier), question_kind(later)
    return a is not None and b is not None and a != b
