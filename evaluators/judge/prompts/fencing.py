"""Fences around untrusted text in judge prompts, and the neutraliser that keeps them shut.

Two layers keep text from closing its fence (or opening a fake one):

1. **A per-request code.** `fence` writes `<untrusted_NAME-MARK ...>` ... `</untrusted_NAME-MARK>`
   with a placeholder MARK; `seal` replaces the mark with a random nonce just before the
   request is sent (`new_nonce`, 64 bits). The judge is told that a fence ends only at the
   closing tag carrying its own code, and text written before the request existed cannot
   know it. The cache key and the prompt version are computed on the unsealed template, so
   the nonce changes neither (the same input is answered from the cache whatever the code).
2. **Neutralising look-alikes.** `neutralise` finds every spelling of a fence opener
   `<untrusted` / `</untrusted` in the text *as a reader sees it*: after decoding HTML
   entities (`&lt;`, `&#60;`, `&#x3c;`, also double-encoded) and `\\u003c` / `%3C` escapes,
   dropping format and invisible characters (zero-width spaces and joiners, soft hyphens,
   word joiners, BOM, bidi controls, variation selectors, combining marks, control
   characters other than whitespace), NFKD/NFKC
   folding (fullwidth and small-form `＜`/`﹤`, mathematical letters), mapping the other
   angle-bracket and slash look-alikes (`‹ 〈 ⟨ ˂ ᐸ ❮ « ∕ ⁄ ⧸ ...`) and Cyrillic, Greek,
   Armenian and small-capital homoglyphs of the Latin letters, and ignoring case. The
   opening bracket of each match, in whatever form the text spelled it, is replaced by `(`,
   so the text reads the same but holds no tag. The mark character itself cannot appear in
   neutralised text (it becomes U+FFFD), so a nonce is never substituted into user text.
"""

from __future__ import annotations

import bisect
import html
import re
import secrets
import unicodedata
from collections.abc import Callable, Iterable, Sequence

FENCE_MARK = "\ue000"
"""Placeholder for the request's nonce in fence tags (a private-use character)."""

DEFUSED = "("
"""What a fence-opener look-alike's bracket becomes."""

_LESS_THAN = (
    "<\ufe3f\ufe64\uff1c\u226e\u2039\u3008\u2329\u27e8\u02c2\u02f1\u1438\u276c\u276e\u29fc"
    "\u00ab\u16b2\u2a79\u2aa1"
)
_SLASH = "/\\\u2215\u2044\u29f8\u2571\u29f5\u1735\u2cc6\u30ce\u31d3\u4e3f\u2f03"
# Homoglyphs of Latin letters in Cyrillic, Greek, Armenian and Latin small capitals
# (the letters of "untrusted" first of all), each pair of strings read position by position.
_LETTERS: dict[str, str] = {
    src: dst
    for pairs in (
        ("\u0430\u0410\u0441\u0421\u0435\u0415\u0451\u0401\u043e\u041e", "aacceeeeoo"),
        ("\u0440\u0420\u0445\u0425\u0443\u0423\u0455\u0405\u0456\u0406", "ppxxyyssii"),
        ("\u0458\u0408\u04bb\u0501\u0442\u0422\u043f\u041f\u0438\u0418", "jjhdttnnuu"),
        ("\u0446\u0426\u0433\u0413\u043a\u041a\u043c\u041c\u043d\u041d", "uurrkkmmhh"),
        ("\u0432\u0412\u0437\u04cf\u0491\u04ae\u04af\u051b\u051d\u0475", "bb3lryyqwv"),
        ("\u0474\u0454\u0404\u03b1\u0391\u03b5\u0395\u03bf\u039f\u03c1", "veeaaeeoop"),
        ("\u03a1\u03c4\u03a4\u03c5\u03a5\u03b7\u039d\u03bd\u03b9\u0399", "pttuynnvii"),
        ("\u03ba\u039a\u03c7\u03a7\u03f2\u03f9\u0392\u03bc\u0396\u0397", "kkxxccbuzh"),
        ("\u039c\u057d\u0578\u0570\u0585\u0584\u0566\u0581\u054f\u0535", "munhopqgst"),
        ("\u1d1c\u0274\u1d1b\u0280\ua731\u1d07\u1d05\u0131\u0237\u0251", "untrsedija"),
        ("\u0261\u028f\u1d00\u1d04\u1d0f\u1d18\u0299\u029c\u1d0b\u029f", "gyacopbhkl"),
        ("\u1d0d\u1d21\u1d22\u1d20\u0268\u0289\u01b4\u0282\u0256\u0257", "mwzviuysdd"),
        ("\u01ad\u0288\u027e\u027d\u0272\u0273\u03c2\u0219\u021b", "ttrrnnsst"),
    )
    for src, dst in zip(*pairs, strict=True)
}
_FOLD = {**{c: "<" for c in _LESS_THAN}, **{c: "/" for c in _SLASH}, **_LETTERS}
# Characters that render as nothing (besides the format category Cf and combining marks).
_INVISIBLE = frozenset("\u115f\u1160\u3164\uffa0\u2800\u034f\u17b4\u17b5\u180b\u180c\u180d")

_ESCAPE = re.compile(
    r"&(?:#[0-9]{1,8}|#[xX][0-9a-fA-F]{1,7}|[A-Za-z][A-Za-z0-9]{1,31});?"
    r"|\\u[0-9a-fA-F]{4}|\\U[0-9a-fA-F]{8}|\\x[0-9a-fA-F]{2}|%[0-9a-fA-F]{2}"
)
# The characters whose folded form is "<" (checked over all of Unicode: each gives one "<").
_LT = re.compile("[" + re.escape(_LESS_THAN) + "]")
_OPENER = re.compile(r"<\s*/?\s*untrusted")
_ASCII_CONTROL = re.compile("[\x00-\x08\x0e-\x1b\x7f]")
# Text holding none of these cannot show a "<" to a reader: it is left alone at once.
_HINT = re.compile("[" + re.escape(_LESS_THAN + "&\\%") + "]")


class _Table(dict[int, str]):
    """A `str.translate` table filled on first sight of each character, so the reader's
    view of a long text is computed at C speed after the first few characters."""

    def __init__(self, fn: Callable[[str], str]) -> None:
        super().__init__()
        self.fn = fn

    def __missing__(self, key: int) -> str:
        value = self.fn(chr(key))
        if len(self) < 65536:
            self[key] = value
        return value


def new_nonce() -> str:
    """A fresh random fence code (64 bits, hex)."""
    return secrets.token_hex(8)


def fence(name: str, text: str, **attrs: object) -> str:
    """`<untrusted_NAME-CODE attr="v">text</untrusted_NAME-CODE>`, the text neutralised.

    CODE is `FENCE_MARK` until `seal` puts the request's nonce in its place."""
    extra = "".join(f' {key}="{value}"' for key, value in attrs.items())
    tag = f"untrusted_{name}-{FENCE_MARK}"
    return f"<{tag}{extra}>\n{neutralise(text)}\n</{tag}>"


def fence_contexts(texts: Sequence[str]) -> str:
    """Contexts numbered from 1 in rank order, each in its own fence."""
    return "\n".join(fence("context", t, index=i) for i, t in enumerate(texts, start=1))


def fence_items(name: str, items: Iterable[str], prefix: str = "") -> str:
    """Items a judge extracted from untrusted text (claims, entities), one fence around
    `1. first` / `2. second` lines; each item's whitespace is collapsed, so an item
    cannot start a line of its own and forge a number."""
    lines = (f"{prefix}{i}. {' '.join(item.split())}" for i, item in enumerate(items, start=1))
    return fence(name, "\n".join(lines))


def seal(messages: Sequence[dict[str, str]], nonce: str) -> list[dict[str, str]]:
    """The messages with every fence mark replaced by `nonce` (what is actually sent)."""
    return [{**m, "content": m["content"].replace(FENCE_MARK, nonce)} for m in messages]


def neutralise(text: str) -> str:
    """`text` with the bracket of every fence-opener look-alike replaced by `(`."""
    if FENCE_MARK in text:
        text = text.replace(FENCE_MARK, "\ufffd")
    spans = _opener_spans(text)
    if not spans:
        return text
    out: list[str] = []
    pos = 0
    for begin, end in spans:
        if begin < pos:
            continue
        out.append(text[pos:begin])
        out.append(DEFUSED)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def has_fence_lookalike(text: str) -> bool:
    """Whether a reader could see a fence opener (`<untrusted`, `</untrusted`) in `text`."""
    return bool(_opener_spans(text))


def _fold_text(text: str) -> str:
    # ASCII has no invisible characters or homoglyphs: case and "\\" are all there is.
    if text.isascii():
        return text.lower().replace("\\", "/")
    return text.translate(_FOLDED)


def _opener_spans(text: str) -> list[tuple[int, int]]:
    """Source spans of the brackets of the fence openers a reader sees in `text`."""
    if not _HINT.search(text):
        return []
    plain = text.isascii() and not _ASCII_CONTROL.search(text)
    visible = text if plain else text.translate(_VISIBLE)
    decoded, maps = _decode_escapes(visible)
    if not _LT.search(decoded):
        return []
    seen = _fold_text(decoded)
    matches = [m.start() for m in _OPENER.finditer(seen)]
    if not matches:
        return []
    # The k-th "<" of the view is the k-th "<"-like character of the decoded text.
    lt_seen = [i for i, c in enumerate(seen) if c == "<"]
    lt_decoded = [m.start() for m in _LT.finditer(decoded)]
    kept = None
    if len(visible) != len(text):
        kept = [i for i, c in enumerate(text) if not _invisible(c)]
    spans = []
    for start in matches:
        at = lt_decoded[bisect.bisect_left(lt_seen, start)]
        begin, end = at, at + 1
        for pass_map in reversed(maps):
            begin, end = _back(pass_map, begin)[0], _back(pass_map, end - 1)[1]
        if kept is not None:
            begin, end = kept[begin], kept[end - 1] + 1
        spans.append((begin, end))
    return spans


# One decoding pass: (position in the new text, start and end in the old, chars produced).
_PassMap = list[tuple[int, int, int, int]]


def _decode_escapes(text: str) -> tuple[str, list[_PassMap]]:
    """Escapes decoded (up to three times: `&amp;lt;` is `&lt;` is `<`), with position maps."""
    maps: list[_PassMap] = []
    for _ in range(3):
        if "&" not in text and "\\" not in text and "%" not in text:
            break
        out: list[str] = []
        records: _PassMap = []
        pos = 0
        length = 0
        for m in _ESCAPE.finditer(text):
            decoded = _unescape(m.group())
            if decoded is None:
                continue
            out.append(text[pos : m.start()])
            length += m.start() - pos
            produced = 0 if _invisible(decoded) else 1
            records.append((length, m.start(), m.end(), produced))
            if produced:
                out.append(decoded)
                length += 1
            pos = m.end()
        if not records:
            break
        out.append(text[pos:])
        text = "".join(out)
        maps.append(records)
    return text, maps


def _back(records: _PassMap, index: int) -> tuple[int, int]:
    """The span of the old text that became position `index` of the new one."""
    k = bisect.bisect_right(records, (index, 1 << 62, 0, 0)) - 1
    if k < 0:
        return index, index + 1
    new, old_start, old_end, produced = records[k]
    if new == index and produced:
        return old_start, old_end
    old = old_end + (index - new - produced)
    return old, old + 1


def _unescape(token: str) -> str | None:
    """The one character an escape stands for, or None."""
    try:
        if token.startswith("&"):
            decoded = html.unescape(token)
            if decoded == token and not token.endswith(";"):
                decoded = html.unescape(token + ";")
        elif token.startswith("%"):
            decoded = chr(int(token[1:], 16))
        else:
            decoded = chr(int(token[2:], 16))
    except (ValueError, OverflowError):
        return None
    return decoded if len(decoded) == 1 else None


def _invisible(char: str) -> bool:
    category = unicodedata.category(char)
    return (
        char in _INVISIBLE
        or category in ("Cf", "Mn", "Me")
        or (category == "Cc" and not char.isspace())
    )


def _fold(char: str) -> str:
    mapped = _FOLD.get(char)
    if mapped is not None:
        return mapped
    out = []
    for c in unicodedata.normalize("NFKD", char):
        if _invisible(c):
            continue
        c = _FOLD.get(c, c)
        out.append(unicodedata.normalize("NFKC", c).casefold())
    return "".join(out)


_VISIBLE = _Table(lambda c: "" if _invisible(c) else c)
_FOLDED = _Table(_fold)
