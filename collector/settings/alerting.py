"""Noticing and explaining a quality change: the drift detectors behind the page and
ticket alerts (`alerting`), the live comparison of two versions (`canary`) and the
dimensions `ragpulse explain` attributes a change to (`slices`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from collector.settings.durations import parse_duration
from collector.settings.fields import CSV, Group, split_csv

PAGE_METRICS = [
    "hit_rate@1",
    "hit_rate@5",
    "mrr",
    "ndcg@10",
    "faithfulness",
    "answer_relevance",
    "context_relevance",
]


class AlertingSettings(Group):
    """The jobs' drift detectors behind the page and ticket alerts
    (`collector.jobs.drift.detector`)."""

    enabled: bool = True
    """Run the drift detectors (ragpulse_drift_score) in the jobs."""
    false_pages_per_week: float = Field(0.5, gt=0)
    """Family-wise: false pages a week over every paged metric x group series together."""
    false_tickets_per_week: float = Field(2.0, gt=0)
    """Family-wise, for the slow-drift (ticket) detector over every metric with a direction."""
    page_drop: float = Field(0.15, gt=0, lt=1)
    """Relative change the paging detector is tuned to catch fastest."""
    ticket_drop: float = Field(0.05, gt=0, lt=1)
    """Relative change the ticket detector is tuned to (slow drifts)."""
    page_metrics: CSV = PAGE_METRICS
    """Metrics whose drops page (the rest open tickets only)."""
    span: str = "24h"
    """The recent span tested against the rest of the longest window (the baseline)."""
    page_within: str = "1h"
    """Target delay of a page: `ragpulse_detectable_drop` says what is caught within it."""
    judge_page_within: str = "3h"
    """The same for LLM-judge metrics (a few percent of the traffic is judged)."""
    min_baseline: int = Field(30, ge=2)
    """A series needs this many baseline scores before its detectors run."""
    every: str = "5m"
    """The detectors are recomputed at most this often (the windows: every run)."""

    _csv = field_validator("page_metrics", mode="before")(split_csv)

    @field_validator("span", "page_within", "judge_page_within", "every")
    @classmethod
    def _durations(cls, value: str) -> str:
        parse_duration(value)
        return value


class CanarySettings(Group):
    """The live comparison of two versions (`collector/jobs/catalog/canary.py`): the candidate
    against the baseline over the same window, per guarded metric, with the statistics of
    `ragpulse compare`."""

    enabled: bool = True
    """Runs whenever traces carry versions (`versions.sources`); nothing to do otherwise."""
    baseline: str = ""
    """The baseline version; empty: of the versions with `min_traces` in the window, the
    one first seen just before the candidate."""
    candidate: str = ""
    """The candidate version; empty: the version first seen most recently (with
    `min_traces` in the window)."""
    metrics: CSV = PAGE_METRICS
    """Guarded metrics: the alert fires when the candidate is significantly worse on one."""
    window: str = "24h"
    """Both versions are compared over this same window."""
    min_traces: int = Field(30, ge=2)
    """Scored traces each side needs before its metric is compared."""
    alpha: float = Field(0.05, gt=0, lt=1)
    """Significance level after the correction across the guarded metrics."""
    correction: Literal["holm", "bh"] = "holm"
    """Holm (family-wise error) or Benjamini-Hochberg (false discovery rate)."""
    power: float = Field(0.8, gt=0, lt=1)
    """Power of the smallest detectable difference shown beside each comparison."""
    resamples: int = Field(2000, ge=100, le=100_000)
    """Permutation and bootstrap resamples per comparison."""
    pairing: Literal["auto", "paired", "unpaired"] = "auto"
    """auto: paired on the questions both versions answered (shadow or replay traffic)
    when at least half the smaller side has a partner, else unpaired."""
    every: str = "5m"
    """The comparison is recomputed at most this often (a run that found no two versions
    to compare does not count: the next run looks again)."""

    _csv = field_validator("metrics", mode="before")(split_csv)

    @field_validator("window", "every")
    @classmethod
    def _durations(cls, value: str) -> str:
        parse_duration(value)
        return value

    @model_validator(mode="after")
    def _two_versions(self) -> CanarySettings:
        if self.baseline and self.baseline == self.candidate:
            raise ValueError("canary.baseline and canary.candidate must differ")
        return self


class SliceSettings(Group):
    """The dimensions `ragpulse explain` attributes a metric's change to."""

    dimensions: CSV = ["tenant", "model", "version", "language", "topic"]
    """Tag names; `model` falls back to the trace's model, `language` to the question's
    script (ru / en / other); `topic` is the trace's topic id (the `topics` job's)."""
    max_values: int = Field(20, ge=1, le=1000)
    """Per dimension, the most frequent values are ranked; the rest as one "other"."""
    baseline: str = "7d"
    """What a window is compared with: the time before it, this long."""

    @field_validator("dimensions")
    @classmethod
    def _dimensions(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("a slice dimension is listed twice")
        return value

    @field_validator("baseline")
    @classmethod
    def _baseline(cls, value: str) -> str:
        parse_duration(value)
        return value
