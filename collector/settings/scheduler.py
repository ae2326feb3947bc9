"""The evaluation jobs: when and over which windows they run, how they group and
shard (`scheduler`), and the bounds on the scores the application sent itself
(`external`)."""

from __future__ import annotations

from pydantic import Field, field_validator

from collector.settings.durations import parse_duration
from collector.settings.fields import CSV, Group, split_csv


class SchedulerSettings(Group):
    windows: CSV = ["1h", "24h", "7d"]
    """The windows every metric is aggregated over (each job run computes all of them)."""
    group_labels: CSV = ["tenant", "version", "topic"]
    """Trace tags results are grouped by, one label at a time; `version` is the trace's
    version as `versions.sources` makes it (not a raw tag), `topic` the id of the topic the
    `topics` job gave the trace's question (the `topics.series` largest keep series)."""
    interval_s: float = Field(60.0, gt=0)
    """Seconds between two runs of each job."""
    initial_delay_s: float = Field(5.0, ge=0)
    """Seconds after start-up before the first run of each job (then every interval_s)."""
    jobs: CSV = []
    """Jobs to schedule (empty = all); `ragpulse jobs list` names them."""
    judge_traces_per_run: int = Field(50, ge=1)
    """At most this many new judge-sampled traces are judged per rag_quality run."""
    consistency_sample: int = Field(20, ge=2)
    """Traces re-judged per window by the judge_consistency job."""
    results_retention: str = "30d"
    """metric_results rows older than this are deleted by the jobs that wrote them."""
    shards: int = Field(32, ge=0, le=1024)
    """PostgreSQL: each job's traces are cut into this many shards, leased by every process
    running the jobs, so they share the evaluation (`collector.jobs.sharding.leases`). More than
    the most workers you will run (a worker without a shard idles); each costs one row and
    nothing on the candidate query. Every worker must use the same number. 0: no split,
    one process runs each job whole under its lock (SQLite always does)."""
    shard_lease_s: float = Field(60.0, ge=1.0)
    """A worker's lease on its shards, renewed every third of it while it works: the
    shards of a worker that died are taken over after at most this long."""
    shard_start_grace_s: float = Field(2.0, ge=0.0)
    """A worker that just started makes its first claim once no worker has registered
    for this long (waiting at most twice this), so workers started
    together (several `ragpulse jobs run` at once) all count each other and split the
    shards, instead of the first leasing them all."""

    _csv = field_validator("windows", "group_labels", "jobs", mode="before")(split_csv)

    @field_validator("results_retention")
    @classmethod
    def _retention(cls, value: str) -> str:
        parse_duration(value)
        return value

    @field_validator("windows")
    @classmethod
    def _windows(cls, value: list[str]) -> list[str]:
        for window in value:
            parse_duration(window)
        return value


class ExternalScoresSettings(Group):
    """Evaluation results the application emitted itself (`collector/jobs/catalog/external.py`)."""

    max_names: int = Field(20, ge=1, le=1000)
    """Distinct evaluation names that get `external:<name>` series of their own; further
    names fold into `external:other` (counted in the job's log and report)."""
    max_name_length: int = Field(64, ge=8, le=128)
    """Evaluation names are cleaned (lower case, `[a-z0-9_.@-]`) and cut to this length."""
