"""Bounds on the group label values taken from traces (`labels`) and what a trace's
version is (`versions`): untrusted content must not decide how many series exist."""

from __future__ import annotations

from pydantic import Field, field_validator

from collector.settings.fields import CSV, Group, split_csv


class LabelLimitSettings(Group):
    """Bounds of one group label, overriding the `labels` defaults."""

    max_values: int | None = Field(None, ge=1, le=10_000)
    values: CSV | None = None
    """Allow-list: only these values become series; every other value folds into `other`."""

    _csv = field_validator("values", mode="before")(split_csv)

    @field_validator("values")
    @classmethod
    def _allowed(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and "other" in value:
            raise ValueError("'other' is the value folded values get; it cannot be allowed")
        return value


class LabelSettings(Group):
    """Bounds on group label values taken from traces (`tenant`, ...): untrusted content
    must not decide how many series Prometheus gets."""

    max_values: int = Field(50, ge=1, le=10_000)
    """Distinct values per label that keep series of their own (the most frequent over
    the longest window); the rest fold into `other`."""
    max_length: int = Field(128, ge=16, le=1024)
    """Longer values are cut (with a hash of the whole, so they stay distinct)."""
    per_label: dict[str, LabelLimitSettings] = {}
    """Per label: its own `max_values` and/or an allow-list `values`."""


class VersionSettings(Group):
    """What a trace's version is (`collector/jobs/windows/versions.py`): the value of the `version`
    group label and of the `version` slice of `ragpulse explain` / `traces --version`."""

    sources: CSV = ["version"]
    """Tag names whose values, in this order and joined by "/", make the version (a missing
    one is "-"; none at all: no version). `model` is the trace's `model` field (the GenAI
    model) unless a tag of that name exists: `retriever_version,prompt_version,model`."""
    max_values: int = Field(10, ge=1, le=10_000)
    """Versions that keep series of their own (the most frequent over the longest window);
    the rest fold into `other`. `labels.per_label.version` overrides it."""

    _csv = field_validator("sources", mode="before")(split_csv)

    @field_validator("sources")
    @classmethod
    def _sources(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("at least one version source (a tag name) is needed")
        if len(set(value)) != len(value):
            raise ValueError("a version source is listed twice")
        return value
