"""Topic labels: each topic's most distinctive words, per language, by class-based TF-IDF.

c-TF-IDF (as in BERTopic) treats all questions of one topic as one document: a word's weight
in topic c is tf(t, c) * log(1 + A / f(t)), with tf(t, c) its count in c's questions, f(t)
its count over all topics and A the mean number of words per topic. Words frequent in one
topic and rare elsewhere rank first. It runs per language (Russian and English questions of
one topic give their own keywords): a question's language is its dominant script (Cyrillic:
"ru", Latin: "en"). Words are lower-cased, stop words dropped, and stemmed with nltk's
Snowball stemmers (a Russian noun's six cases count as one word); each stem is shown as its
most frequent spelling in the questions.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from evaluators.scripts import dominant_script

if TYPE_CHECKING:
    from nltk.stem.snowball import SnowballStemmer

LANGUAGES = {"Cyrillic": "ru", "Latin": "en"}
_STEMMER_NAMES = {"ru": "russian", "en": "english"}
_WORD = re.compile(r"[^\W\d_]{2,}")

_RUSSIAN_STOP_TEXT = """
    а без более бы был была были было быть в вам вас ваш ваша ваше ваши весь во вот все всё
    всего всех вы где да даже для до его ее её если есть еще ещё же за здесь и из или им их
    к как какая какие какой ко когда кто ли либо мне мной мой моя мое моё мои мы на над нам
    нас не него нее неё нет ни них но ну о об однако он она они оно от по под при про с со
    так также там те тем то того тоже той только том ту ты у уже хотя чего чей чем что чтобы
    эта эти это этого этой этот я можно нужно надо ли почему зачем сколько хочу могу мочь
    пожалуйста подскажите скажите очень просто
"""
RUSSIAN_STOP_WORDS = frozenset(_RUSSIAN_STOP_TEXT.split())
STOP_WORDS = MappingProxyType(
    {
        "ru": RUSSIAN_STOP_WORDS,
        "en": frozenset(ENGLISH_STOP_WORDS)
        | {"hi", "hello", "please", "does", "did", "doing", "im", "ive", "dont", "cant"},
    }
)


@dataclass(frozen=True)
class TopicLabel:
    """Topic `topic`'s keywords, best first, per language ("ru", "en"; a language without
    questions in the topic is absent)."""

    topic: int
    keywords: MappingProxyType[str, tuple[str, ...]]

    def text(self, per_language: int = 3) -> str:
        """A short label: the top keywords of each language, "en" first, joined by " / "."""
        parts = [
            ", ".join(self.keywords[lang][:per_language])
            for lang in sorted(self.keywords, key=lambda lang: (lang != "en", lang))
            if self.keywords[lang]
        ]
        return " / ".join(parts)


def language(text: str) -> str | None:
    """ "ru" or "en" by the text's dominant script; None for other scripts or no letters."""
    script = dominant_script(text)
    return LANGUAGES.get(script) if script is not None else None


def _words(text: str, lang: str, stemmer: SnowballStemmer) -> list[tuple[str, str]]:
    stops = STOP_WORDS[lang]
    out = []
    for word in _WORD.findall(text.lower()):
        if word in stops:
            continue
        out.append((stemmer.stem(word), word))
    return out


def class_tfidf(counts: np.ndarray) -> np.ndarray:
    """c-TF-IDF weights of a (topics x terms) count matrix: tf * log(1 + A / f)."""
    counts = np.asarray(counts, dtype=np.float64)
    if counts.size == 0:
        return counts
    per_term = counts.sum(axis=0)
    mean_words = counts.sum() / max(len(counts), 1)
    idf = np.log1p(np.divide(mean_words, per_term, out=np.zeros_like(per_term), where=per_term > 0))
    weights: np.ndarray = counts * idf
    return weights


def topic_keywords(texts: Sequence[str], labels: np.ndarray, top: int = 5) -> list[TopicLabel]:
    """Each topic's `top` keywords per language; topics are 0..max(labels), -1 rows unused."""
    labels = np.asarray(labels, dtype=np.int64)
    if len(texts) != len(labels):
        raise ValueError(f"{len(texts)} texts for {len(labels)} labels")
    count = int(labels.max()) + 1 if len(labels) else 0
    found: dict[int, dict[str, tuple[str, ...]]] = {t: {} for t in range(count)}
    from nltk.stem.snowball import SnowballStemmer  # ~45 MB: only where topics are named

    for lang, stemmer_name in _STEMMER_NAMES.items():
        stemmer = SnowballStemmer(stemmer_name)
        per_topic: list[Counter[str]] = [Counter() for _ in range(count)]
        spellings: dict[str, Counter[str]] = {}
        present = set()
        for text, topic in zip(texts, labels.tolist(), strict=True):
            if topic < 0 or language(text) != lang:
                continue
            present.add(topic)
            for stem, word in _words(text, lang, stemmer):
                per_topic[topic][stem] += 1
                spellings.setdefault(stem, Counter())[word] += 1
        vocabulary = sorted(spellings)
        if not vocabulary:
            continue
        column = {stem: j for j, stem in enumerate(vocabulary)}
        counts = np.zeros((count, len(vocabulary)))
        for topic, counter in enumerate(per_topic):
            for stem, n in counter.items():
                counts[topic, column[stem]] = n
        weights = class_tfidf(counts)
        for topic in sorted(present):
            order = np.lexsort((np.arange(len(vocabulary)), -weights[topic]))
            best = [j for j in order[:top] if weights[topic, j] > 0]
            found[topic][lang] = tuple(spellings[vocabulary[j]].most_common(1)[0][0] for j in best)
    return [TopicLabel(t, MappingProxyType(found[t])) for t in range(count)]
