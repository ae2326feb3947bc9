"""What a job is, what it is given, and what one run reports.

`JobDefinition` says which metrics a job computes over which stored traces (each job
module, `ux.py`, `rag_quality.py`, ..., builds one). `JobEnvironment` is everything a job
needs from outside, typed by what the jobs use of it (`seams.py`, `publish.ResultsSink`,
the evaluators' `TextEncoder`): the service builds it once and passes it in explicitly.

It sits below the engine that runs the definitions (`engine.py`), so what a definition's
`factory` builds is typed here by what a definition knows of it: a `Job`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import Select
from sqlalchemy.orm import Session, sessionmaker

from collector.jobs.drift.detector import DriftConfig
from collector.jobs.recording.observers import OutcomeObserver
from collector.jobs.run.publish import ResultsSink
from collector.jobs.traces.candidates import Filter
from collector.jobs.traces.seams import SampleMapper
from collector.jobs.windows.labels import Folding, LabelLimits
from collector.jobs.windows.slices import DEFAULT_DIMENSIONS
from collector.jobs.windows.versions import DEFAULT_SOURCES
from collector.jobs.windows.window import Window
from collector.settings import CanarySettings, JudgeSettings
from evaluators.embedder import TextEncoder
from evaluators.judge.protocol import Judge


def _all(query: Select[Any]) -> Select[Any]:
    return query


@dataclass(frozen=True)
class JobDefinition:
    """What a job evaluates: its metrics and which stored traces are its candidates."""

    name: str
    metrics: tuple[str, ...]
    description: str
    candidates: Filter = _all
    uses_judge: bool = False
    context_lookback_s: float = 0.0
    """Earlier traces within this look-back are given to per-sample metrics as context."""
    max_new_per_run: int | None = None
    dataset_candidates: Filter | None = None
    """Which candidates dataset metrics look at (default: `candidates`)."""
    dataset_cap: int = 5000
    dataset_groups: bool = True
    factory: Callable[[JobDefinition, JobEnvironment], Job] | None = None
    """Builds a job that computes its own metrics (not registry metrics) instead of the
    per-trace `IncrementalJob` (e.g. judge_consistency, over the judgments table)."""


SloRule = tuple[str, str, str, float]
"""(slo, metric, op, threshold) of a threshold SLO."""


@dataclass(frozen=True)
class JobOptions:
    """What the jobs read of the settings, typed (`scheduler.job_options` builds it from
    them). The defaults are the settings groups' own; nothing else repeats them."""

    metric_options: Mapping[str, Any] = field(default_factory=dict)
    """The evaluators' options (`EvalContext.options`): the `ux` settings (empty: the
    evaluators' own defaults)."""
    canary: CanarySettings = field(default_factory=CanarySettings)
    judge: JudgeSettings = field(default_factory=JudgeSettings)
    """The judge jobs' thresholds: `consistency_delta`, `min_agreement`, ..."""
    metric_jobs: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """Metric -> the jobs storing its per-trace outcomes (the canary reads them)."""
    slo_rules: tuple[SloRule, ...] = ()
    """The threshold SLOs, whose classification the judge agreement job compares with
    the human labels (`evaluators.threshold_agreement`)."""


@dataclass
class JobEnvironment:
    """Everything a job needs, passed in explicitly (the service builds it once)."""

    session_factory: sessionmaker[Session]
    windows: Sequence[Window]
    group_labels: Sequence[str]
    embedder: TextEncoder | None = None
    judge: Judge | None = None
    options: JobOptions = field(default_factory=JobOptions)
    results: ResultsSink | None = None
    retention: timedelta = timedelta(days=30)
    label_limits: LabelLimits = field(default_factory=LabelLimits)
    """Bounds on the group labels' values (`collector.jobs.windows.labels`)."""
    drift: DriftConfig | None = None
    """The drift detectors run on every per-sample metric with a direction (None: off)."""
    slice_dimensions: Sequence[str] = DEFAULT_DIMENSIONS
    """Stored with each trace's outcomes for `ragpulse explain` (`slices.py`)."""
    version_sources: Sequence[str] = DEFAULT_SOURCES
    """The tags that make a trace's version, the `version` label and slice (`versions.py`)."""
    observers: Sequence[OutcomeObserver] = ()
    """Told of every run's new per-trace outcomes after the commit (`observers.py`)."""
    to_sample: SampleMapper | None = None
    """Maps a stored trace (a `Trace` or a row of `trace_rows.SAMPLE_COLUMNS`) to a Sample."""
    judge_transient_retries: int = 3
    """Later runs that retry a trace whose judge calls failed transiently (`retry.py`)."""


class Job(Protocol):
    """A job as a definition knows it: what its `factory` builds, run by the scheduler.
    The factories build subclasses of `engine.IncrementalJob`, which the scheduler
    requires (`scheduler.build_job`); the engine is above this module, so it is not
    named here."""

    @property
    def name(self) -> str: ...

    def run(self, now: datetime | None = None) -> JobReport: ...


@dataclass(frozen=True)
class JobReport:
    job: str
    status: str
    new_traces: int = 0
    results: int = 0
    seconds: float = 0.0
    message: str = ""
    labels: tuple[Folding, ...] = ()
    """Per group label: values seen in the longest window, kept and folded."""
    retries: Mapping[str, int] = field(default_factory=dict)
    """Judge jobs: retries of transient judge failures this run scheduled, per metric."""
    pending_retry: int | None = None
    """Judge jobs: traces waiting for a retry after this run (None: not a judge job)."""
    shards: int | None = None
    """Sharded runs: the shards this worker evaluated (None: the job ran whole)."""
