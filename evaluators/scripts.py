"""Which writing system a text is in, and a watch on texts an embedding model cannot read.

An English-only model (all-MiniLM) embeds Cyrillic text as sub-word noise: Russian
paraphrases and unrelated Russian questions land at similar cosines, and every
threshold-based metric on them is wrong without any error. `ScriptWatch` counts, per
encoded batch, the texts whose dominant script is not one the configured model was trained
on, logs a warning when most are, and hands the counts to an observer (the service's
Prometheus counters).
"""

from __future__ import annotations

import logging
import threading
import time
import unicodedata
from collections.abc import Callable, Iterable

logger = logging.getLogger(__name__)

# First word of the Unicode character name -> script, for the scripts models differ on.
_NAME_SCRIPTS = {
    "LATIN": "Latin",
    "CYRILLIC": "Cyrillic",
    "GREEK": "Greek",
    "ARABIC": "Arabic",
    "HEBREW": "Hebrew",
    "CJK": "Han",
    "HIRAGANA": "Japanese",
    "KATAKANA": "Japanese",
    "HANGUL": "Hangul",
    "THAI": "Thai",
    "DEVANAGARI": "Devanagari",
    "ARMENIAN": "Armenian",
    "GEORGIAN": "Georgian",
}
WARN_RATIO = 0.5
WARN_EVERY_S = 3600.0

ScriptObserver = Callable[[str, int, int], None]
"""Called as observer(model_name, texts, mismatched) after each encoded batch."""


def char_script(ch: str) -> str | None:
    """The script of one letter, "Other" for letters of scripts not listed, None for
    non-letters (digits, punctuation, spaces carry no script)."""
    if not ch.isalpha():
        return None
    if ch.isascii():
        return "Latin"
    name = unicodedata.name(ch, "")
    return _NAME_SCRIPTS.get(name.split(" ", 1)[0], "Other") if name else "Other"


def dominant_script(text: str, sample: int = 200) -> str | None:
    """The script of most letters among the first `sample` characters (None: no letters)."""
    counts: dict[str, int] = {}
    for ch in text[:sample]:
        script = char_script(ch)
        if script is not None:
            counts[script] = counts.get(script, 0) + 1
    return max(counts, key=counts.__getitem__) if counts else None


def count_unsupported(texts: Iterable[str], scripts: frozenset[str]) -> tuple[int, int]:
    """(texts with letters, those whose dominant script is not in `scripts`)."""
    total = mismatched = 0
    for text in texts:
        script = dominant_script(text)
        if script is None:
            continue
        total += 1
        mismatched += script not in scripts
    return total, mismatched


class ScriptWatch:
    """Counts texts outside a model's scripts; warns (at most hourly) when most are."""

    def __init__(
        self,
        model_name: str,
        scripts: frozenset[str] | None,
        observer: ScriptObserver | None = None,
    ) -> None:
        self.model_name = model_name
        self.scripts = scripts
        self.observer = observer
        self.texts = 0
        self.mismatched = 0
        self._warned_at: float | None = None
        self._lock = threading.Lock()

    def observe(self, texts: Iterable[str]) -> float | None:
        """Count a batch; returns its mismatch ratio (None when the model's scripts are
        unknown or the batch has no letters)."""
        if self.scripts is None:
            return None
        total, mismatched = count_unsupported(texts, self.scripts)
        if not total:
            return None
        ratio = mismatched / total
        with self._lock:
            self.texts += total
            self.mismatched += mismatched
            now = time.monotonic()
            warn = ratio > WARN_RATIO and (
                self._warned_at is None or now - self._warned_at >= WARN_EVERY_S
            )
            if warn:
                self._warned_at = now
        if warn:
            logger.warning(
                "%.0f%% of %d texts are in a script the embedding model %s was not trained on "
                "(it reads %s): similarity metrics on them are unreliable; configure a "
                "multilingual model (RAGPULSE_EMBEDDINGS__MODEL)",
                100 * ratio,
                total,
                self.model_name,
                ", ".join(sorted(self.scripts)),
            )
        if self.observer is not None:
            self.observer(self.model_name, total, mismatched)
        return ratio
