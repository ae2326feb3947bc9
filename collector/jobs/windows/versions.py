"""A trace's version: the one value behind the `version` group label and slice.

Which tags make a version is configured (`versions.sources`, default `version`): e.g.
`retriever_version,prompt_version,model` gives `r3/p12/gpt-4o`. The source `model` is
the trace's `model` field (the GenAI model) unless a tag of that name exists. A missing
part is `-`; a trace with none of them has no version. The value is cleaned like every
label value (`labels.clean_value`), so the `version` label, `ragpulse explain`'s
version slice and `ragpulse traces --version` all read the same string.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from collector.jobs.windows.labels import DEFAULT_MAX_LENGTH, clean_value

VERSION_LABEL = "version"
"""The group label and slice dimension whose value is `version_of`, not a raw tag."""

DEFAULT_SOURCES: tuple[str, ...] = (VERSION_LABEL,)
MODEL_SOURCE = "model"
"""The source that falls back to the trace's `model` field."""
SEPARATOR = "/"
MISSING = "-"


def version_of(
    tags: Mapping[str, Any] | None,
    model: str | None,
    sources: Sequence[str] = DEFAULT_SOURCES,
    max_length: int = DEFAULT_MAX_LENGTH,
) -> str | None:
    """The trace's version from its tags (and `model`), or None when no source has a
    value; each part is cleaned, the whole is cut to `max_length` like a label value."""
    parts = []
    found = False
    for source in sources:
        raw = (tags or {}).get(source)
        if raw is None and source == MODEL_SOURCE:
            raw = model
        part = None if raw is None else clean_value(raw, max_length)
        found = found or part is not None
        parts.append(part or MISSING)
    if not found:
        return None
    return clean_value(SEPARATOR.join(parts), max_length)
