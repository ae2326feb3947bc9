"""ROUGE tokenization: lower-cased Unicode words.

rouge-score lower-cases, turns every character outside [a-z0-9] into a separator and
keeps the remaining runs, so it silently drops every non-ASCII letter (a Russian answer
has no tokens at all). We keep the same rule with "letter or digit" in the Unicode
sense: tokens are the maximal runs of characters matching `[^\\W_]` (letters and digits of
any script; the underscore and punctuation separate). For ASCII text these are exactly
rouge-score's tokens. Non-ASCII text is NFC-normalized first so that a letter typed
with a combining accent (e.g. "й" as "и" + U+0306) stays one word. No stemming.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_ASCII_WORD = re.compile(r"[a-z0-9]+")
_WORD = re.compile(r"[^\W_]+")


@lru_cache(maxsize=1 << 16)
def words(text: str) -> tuple[str, ...]:
    """The ROUGE tokens of `text` (cached: the three ROUGE variants share them)."""
    if text.isascii():
        return tuple(_ASCII_WORD.findall(text.lower()))
    return tuple(_WORD.findall(unicodedata.normalize("NFC", text).lower()))
