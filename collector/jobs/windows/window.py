"""Time windows (`1h`, `24h`, `7d`) and the groups a trace is counted in.

A trace counts in the overall group (key "") and, for each configured group label that its
tags carry (e.g. `tenant`; `version` is derived, `collector.jobs.windows.versions`), in the
group `label=value`. `topic` is not a tag: it is the id of the topic the `topics` job gave
the trace's question (`collector.store.topics`), as a string. Groups are one label at a
time, not the cross product, so the number of series stays proportional to the values, and
values are cleaned and bounded per label (`collector.jobs.windows.labels`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Any

from collector.jobs.windows.labels import DEFAULT_MAX_LENGTH, clean_value
from collector.jobs.windows.versions import DEFAULT_SOURCES, VERSION_LABEL, version_of
from collector.settings import parse_duration

_EMPTY: Mapping[str, str] = MappingProxyType({})
TOPIC_LABEL = "topic"
"""The group label and slice dimension whose value is the trace's topic id, not a tag."""


@dataclass(frozen=True, slots=True)
class Window:
    name: str
    seconds: float

    def start(self, now: datetime) -> datetime:
        return now - timedelta(seconds=self.seconds)


def parse_windows(names: Sequence[str]) -> tuple[Window, ...]:
    """Windows sorted from the shortest to the longest."""
    windows = {Window(name, parse_duration(name)) for name in names}
    return tuple(sorted(windows, key=lambda w: w.seconds))


@dataclass(frozen=True, slots=True)
class Group:
    key: str = ""
    labels: Mapping[str, str] = field(default_factory=lambda: _EMPTY)


OVERALL = Group()


def group_values(
    tags: Mapping[str, Any] | None,
    group_labels: Sequence[str],
    max_length: int = DEFAULT_MAX_LENGTH,
    *,
    model: str | None = None,
    version_sources: Sequence[str] = DEFAULT_SOURCES,
    topic: int | None = None,
) -> dict[str, str]:
    """The configured labels' values in a trace's tags, cleaned for use as label values
    (`labels.clean_value`); labels it lacks, or whose value cleans to nothing, are left out.
    `version` is the trace's version (`versions.version_of`), not a tag of that name;
    `topic` the trace's topic id (none yet: no topic label)."""
    out = {}
    for label in group_labels:
        if label == TOPIC_LABEL:
            value = None if topic is None else str(topic)
        elif label == VERSION_LABEL:
            value = version_of(tags, model, version_sources, max_length)
        else:
            raw = None if not tags else tags.get(label)
            value = None if raw is None else clean_value(raw, max_length)
        if value is not None:
            out[label] = value
    return out


def group_for(label: str, value: str) -> Group:
    return Group(f"{label}={value}", MappingProxyType({label: value}))
