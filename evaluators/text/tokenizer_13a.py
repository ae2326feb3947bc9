"""The `13a` tokenizer of mteval-v13a.pl (WMT), as sacrebleu applies it.

On one line of text:
1. drop `<skipped>`, join `-\\n` hyphenations, turn other newlines into spaces;
2. unescape `&quot;`, `&amp;`, `&lt;`, `&gt;` (in that order);
3. pad the line with a space on each side, then, in order:
   - surround every ASCII punctuation or symbol except `'`, `-`, `.` and `,` (the set
     `{|}~ [\\]^_` space !"#$%& ()*+ :;<=>?@ /`) with spaces;
   - split `.` and `,` from a preceding non-digit, and from a following non-digit;
   - split `-` from a preceding digit;
4. split on whitespace.

Everything outside ASCII (Cyrillic letters, «», —) is left alone, so Russian words
stay words. Lower-casing, when wanted, is the caller's job (done before this).
"""

from __future__ import annotations

import re
from functools import lru_cache

_RULES = (
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),
)


@lru_cache(maxsize=1 << 16)
def tokenize_13a(line: str) -> tuple[str, ...]:
    """The 13a tokens of `line` (cached: answers and references repeat across metrics)."""
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = (
            line.replace("&quot;", '"')
            .replace("&amp;", "&")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
        )
    line = f" {line} "
    for pattern, replacement in _RULES:
        line = pattern.sub(replacement, line)
    return tuple(line.split())
