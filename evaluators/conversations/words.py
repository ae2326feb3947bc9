"""Words of a user's message for the conversation detectors: tokens, stems, content words.

Messages mix languages ("can I talk to оператор?"), so each token is stemmed by its own
script: Cyrillic with nltk's Russian Snowball stemmer, anything else with the English one
(a Russian noun's six cases, or "talking"/"talked", count as one stem). Text is NFC-normalised,
lower-cased, "ё" read as "е" and curly apostrophes as straight ones, so "don’t" is one
token "don't". Content words drop stop words and courtesy words ("please", "спасибо"):
they are what two questions must share to be about the same thing.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import TYPE_CHECKING

from evaluators.topics.labels import RUSSIAN_STOP_WORDS, STOP_WORDS

if TYPE_CHECKING:
    from nltk.stem.snowball import SnowballStemmer

_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_CYRILLIC = re.compile(r"[а-я]")


def word_set(text: str) -> frozenset[str]:
    """The whitespace-separated words of `text` (word lists written as prose)."""
    return frozenset(text.split())


COURTESY = word_set(
    """
    please pls plz thanks thank thx hi hello hey ok okay again still yes no sorry
    спасибо пожалуйста пжл пж здравствуйте привет добрый день вечер утро ок окей хорошо
    ещё еще снова опять раз да нет извините так всё все
    """
)
CONTENT_STOPS = RUSSIAN_STOP_WORDS | STOP_WORDS["en"] | COURTESY


@lru_cache(maxsize=2)
def _stemmer(language: str) -> SnowballStemmer:
    # imported on first use: nltk adds ~45 MB to every process that imports the jobs
    from nltk.stem.snowball import SnowballStemmer

    return SnowballStemmer(language)


def normalise(text: str) -> str:
    """Lower-cased NFC text with "ё" as "е" and curly apostrophes straight."""
    text = unicodedata.normalize("NFC", text).lower()
    return text.replace("ё", "е").replace("’", "'").replace("‘", "'").replace("`", "'")


def tokens(text: str) -> tuple[str, ...]:
    """The message's words (letters and digits, contractions kept whole), normalised."""
    return tuple(_TOKEN.findall(normalise(text)))


@lru_cache(maxsize=1 << 15)
def stem(token: str) -> str:
    """The Snowball stem of one normalised token, in the language of its script."""
    if token.isdigit():
        return token
    language = "russian" if _CYRILLIC.search(token) else "english"
    return str(_stemmer(language).stem(token))


def content_stems(text: str) -> tuple[str, ...]:
    """Stems of the message's content words (stop and courtesy words dropped), in order."""
    return tuple(stem(t) for t in tokens(text) if t not in CONTENT_STOPS and len(t) > 1)


def one_edit(a: str, b: str) -> bool:
    """Are a and b at most one insertion, deletion or substitution apart (a typo)?"""
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    return a[i + 1 :] == b[i + 1 :] if len(a) == len(b) else a[i:] == b[i + 1 :]
