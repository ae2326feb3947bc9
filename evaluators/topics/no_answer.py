"""Answers that say the system does not know: "I don't know", "не нашёл информации".

A RAG system whose corpus lacks the answer usually says so in a few stock phrasings
(its prompt tells it to rather than make something up). `says_no_answer` looks for them
in English and Russian, case-insensitively, with ё read as е and typographic
apostrophes as plain ones. Phrases, not single words: "no" or "нет" alone say nothing.
Only the start of a long answer is read by the callers (`HEAD_CHARS`): the admission
comes first, and a long answer that answers does not hide one.
"""

from __future__ import annotations

import re

HEAD_CHARS = 400
"""How much of an answer the callers read (where the admission is)."""

_EN = (
    r"i (?:do not|don't|dont) know",
    r"i(?: am|'m) not sure",
    r"i (?:could not|couldn't|cannot|can't|was unable to|am unable to) (?:find|locate|answer|help)",
    r"(?:unable|not able) to (?:find|answer|locate)",
    r"(?:i )?(?:do not|don't) have (?:any |enough |the |specific )?(?:information|details|data)",
    r"(?:there is|there's|i have|i found) no (?:information|relevant|mention|data)",
    r"no (?:relevant )?information (?:is )?(?:available|provided|about|on|in)",
    r"(?:context|documents?|sources?|knowledge base)(?: provided)? "
    r"(?:does not|doesn't|do not|don't) (?:contain|mention|include|say|cover)",
    r"(?:is|are) not (?:mentioned|covered|described) in the (?:context|documents?|sources?)",
    r"(?:cannot|can't) (?:provide|give) (?:an|a|any) (?:answer|information)",
)
_RU = (
    r"не знаю",
    r"не (?:могу|можем) (?:ответить|сказать|найти|помочь)",
    r"не удалось (?:найти|ответить|определить)",
    r"не наш(?:ел|ла|ли|лось)",
    r"нет (?:информации|сведений|данных)",
    r"(?:информации|сведений|данных) (?:об этом |по этому вопросу |по вопросу )?нет",
    r"не располага(?:ю|ем)",
    r"(?:контекст|документ\w*|источник\w*|база знаний) не (?:содерж|упомина|включа|описыва)\w*",
    r"не (?:упоминается|указано|описано|сказано) в (?:контексте|документ\w*|источник\w*)",
    r"затрудняюсь ответить",
    r"нет ответа",
)
_PATTERN = re.compile("|".join(f"(?:{p})" for p in (*_EN, *_RU)))
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'", "ё": "е"})


def says_no_answer(answer: str | None) -> bool:
    """True when the answer's start admits there is no answer (module docstring)."""
    if not answer:
        return False
    head = " ".join(answer[:HEAD_CHARS].lower().translate(_APOSTROPHES).split())
    return _PATTERN.search(head) is not None
