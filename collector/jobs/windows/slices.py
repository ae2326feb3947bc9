"""A trace's slice dimensions: what `ragpulse explain` attributes a metric's change to.

Dimensions are configured (`slices.dimensions`; default tenant, model, version, language, topic). A
dimension's value is the trace's tag of that name; `version` is the trace's version
(`versions.version_of`, configured by `versions.sources`), `model` falls back to the trace's
`model` field and `language` to the script of the question (Cyrillic or Latin letters: "ru"
/ "en"; neither: "other"), so a Russian-and-English bot is sliced by language without
tagging; `topic` is the id of the trace's topic (`window.TOPIC_LABEL`). Values are cleaned
like label values (`labels.clean_value`); their number is bounded when explaining (the most
frequent, the rest as "other")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from collector.jobs.windows.labels import DEFAULT_MAX_LENGTH, clean_value
from collector.jobs.windows.versions import DEFAULT_SOURCES, VERSION_LABEL, version_of
from collector.jobs.windows.window import TOPIC_LABEL

DEFAULT_DIMENSIONS = ("tenant", "model", "version", "language", TOPIC_LABEL)


def language_of(text: str | None) -> str:
    """ "ru" when most letters are Cyrillic, "en" when most are Latin, else "other"."""
    cyrillic = latin = 0
    for ch in text or "":
        if "а" <= ch.lower() <= "я" or ch in "ёЁ":
            cyrillic += 1
        elif "a" <= ch.lower() <= "z":
            latin += 1
    if cyrillic == latin == 0:
        return "other"
    return "ru" if cyrillic > latin else "en"


def slice_values(
    tags: Mapping[str, Any] | None,
    *,
    model: str | None,
    question: str | None,
    dimensions: Sequence[str],
    max_length: int = DEFAULT_MAX_LENGTH,
    version_sources: Sequence[str] = DEFAULT_SOURCES,
    topic: int | None = None,
) -> dict[str, str]:
    """The trace's value of each dimension it has (cleaned); `version` is the trace's
    version (`versions.version_of`), the same value as its `version` group label; `topic`
    its topic id, as its `topic` group label."""
    out: dict[str, str] = {}
    for dim in dimensions:
        if dim == TOPIC_LABEL:
            if topic is not None:
                out[dim] = str(topic)
            continue
        if dim == VERSION_LABEL:
            version = version_of(tags, model, version_sources, max_length)
            if version is not None:
                out[dim] = version
            continue
        raw = (tags or {}).get(dim)
        if raw is None and dim == "model":
            raw = model
        if raw is None and dim == "language":
            raw = language_of(question)
        value = None if raw is None else clean_value(raw, max_length)
        if value is not None:
            out[dim] = value
    return out
