"""Prometheus exposition of quality results (SPEC §6) and of ragpulse's own operations.

`QualityCollector` is a custom collector: it turns the in-memory `ResultsCache` into
the quality, detector and label-bound gauge families (`exporters.families`) and never
reads the database. Formatting tens of thousands of series
costs prometheus-client about 25 us each on a small CPU, while the results change only
when a job run publishes, so `/metrics` serves `QualityCollector.render()`: the families
in the text format, rendered once per cache version.
`OperationsMetrics` holds the judge and job counters on a registry passed in (the Kafka
consumer registers its own counters on the same registry).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest
from prometheus_client.registry import Collector

from collector.jobs.windows.labels import Folding, LabelLimits
from exporters.canary import canary_families
from exporters.families import (
    DRIFT_FAMILY,
    LABEL_FAMILIES,
    MDE_FAMILY,
    QUALITY_FAMILIES,
    agreement_families,
    quality_families,
)
from exporters.quality import ResultsCache


class QualityCollector(Collector):
    """Yields `ragpulse_metric_{value,samples,ci_lower,ci_upper}` from the results cache.

    Labels: `metric`, `window` and every configured group label (empty string when the
    point is the overall value or grouped by another label). The jobs already bound each
    label's values (`collector.jobs.windows.labels`); the same bound is applied again here, to
    whatever the cache holds (rows written before the bound existed, other writers), by
    dropping the points of the least-sampled values past it. What that drops is shown by
    `ragpulse_label_values_dropped{label}` next to `ragpulse_label_values_exported{label}`.
    """

    def __init__(
        self,
        cache: ResultsCache,
        group_labels: Sequence[str] = ("tenant",),
        limits: LabelLimits | None = None,
    ) -> None:
        self._cache = cache
        self._limits = limits or LabelLimits()
        self._group_labels = tuple(group_labels)
        self._label_names = ["metric", "window", *self._group_labels]
        self._drift_labels = ["metric", "detector", *self._group_labels]
        self._mde_labels = ["metric", *self._group_labels]
        self._rendered: dict[bool, tuple[int, bytes]] = {}
        self._last_format = False  # True: OpenMetrics
        self._render_lock = threading.Lock()

    def describe(self) -> Iterator[GaugeMetricFamily]:
        for name, doc in QUALITY_FAMILIES:
            yield GaugeMetricFamily(name, doc, labels=self._label_names)
        for name, doc in LABEL_FAMILIES:
            yield GaugeMetricFamily(name, doc, labels=["label"])
        yield GaugeMetricFamily(DRIFT_FAMILY[0], DRIFT_FAMILY[1], labels=self._drift_labels)
        yield GaugeMetricFamily(MDE_FAMILY[0], MDE_FAMILY[1], labels=self._mde_labels)
        yield from agreement_families(())
        yield from canary_families(())

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield from quality_families(self._cache.snapshot(), self._group_labels, self._limits)

    def render(self, openmetrics: bool = False) -> bytes:
        """The families in the Prometheus text format (0.0.4), or in OpenMetrics (ending
        in `# EOF`), re-rendered only after the cache changed; byte for byte what
        `generate_latest` (of that format) makes of `collect()`."""
        with self._render_lock:
            self._last_format = openmetrics
            version = self._cache.version
            done = self._rendered.get(openmetrics)
            if done is None or done[0] != version:
                encode = openmetrics_latest if openmetrics else generate_latest
                done = self._rendered[openmetrics] = (version, encode(_Families(self.collect())))
            return done[1]

    def prerender(self) -> None:
        """Render the format last asked for (at first the text format), so after a job run
        no scrape pays for the formatting."""
        self.render(self._last_format)


class _Families:
    """Already collected families, in the shape `generate_latest` reads a registry."""

    def __init__(self, families: Iterable[Metric]) -> None:
        self._families = list(families)

    def collect(self) -> Iterable[Metric]:
        return self._families


JUDGE_LATENCY_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0)
JOB_DURATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0)


class OperationsMetrics:
    """Counters and histograms about the judge and the scheduled jobs (SPEC §6)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.judge_requests = Counter(
            "ragpulse_judge_requests",
            "LLM-judge requests by model and status (ok, error, cached, budget).",
            ["model", "status"],
            registry=registry,
        )
        self.judge_tokens = Counter(
            "ragpulse_judge_tokens",
            "Tokens used by the LLM judge, by model and kind (prompt, completion).",
            ["model", "kind"],
            registry=registry,
        )
        self.judge_cost = Counter(
            "ragpulse_judge_cost_usd",
            "Money spent on the LLM judge in US dollars, by model.",
            ["model"],
            registry=registry,
        )
        self.judge_latency = Histogram(
            "ragpulse_judge_latency_seconds",
            "Latency of LLM-judge calls (not cache hits).",
            buckets=JUDGE_LATENCY_BUCKETS,
            registry=registry,
        )
        self.job_runs = Counter(
            "ragpulse_job_runs",
            "Scheduled job runs by job and status (ok, error, skipped, locked).",
            ["job", "status"],
            registry=registry,
        )
        self.job_duration = Histogram(
            "ragpulse_job_duration_seconds",
            "Wall time of scheduled job runs.",
            ["job"],
            buckets=JOB_DURATION_BUCKETS,
            registry=registry,
        )
        self.job_last_success = Gauge(
            "ragpulse_job_last_success_timestamp_seconds",
            "Unix time of the last successful run of each job.",
            ["job"],
            registry=registry,
        )

        self.label_values_seen = Gauge(
            "ragpulse_label_values_seen",
            "Distinct values of a group label in a job's longest window (after cleaning).",
            ["job", "label"],
            registry=registry,
        )
        self.label_values_kept = Gauge(
            "ragpulse_label_values_kept",
            "Values of a group label that keep series of their own in a job's last run.",
            ["job", "label"],
            registry=registry,
        )
        self.label_values_folded = Counter(
            "ragpulse_label_values_folded",
            "Group label values folded into 'other' because more than labels.max_values were "
            "seen, summed over job runs (values outside an allow-list are not counted).",
            ["job", "label"],
            registry=registry,
        )

        self.judge_retries = Counter(
            "ragpulse_judge_retries",
            "Traces whose judge metric failed transiently (timeout, 429, 5xx, connection) and "
            "were left waiting for a retry by a later run, by job and metric.",
            ["job", "metric"],
            registry=registry,
        )
        self.judge_pending_retry = Gauge(
            "ragpulse_judge_pending_retry",
            "Traces waiting for a retry of a transient judge failure after a job's last run.",
            ["job"],
            registry=registry,
        )

        self.judge_budget = Gauge(
            "ragpulse_judge_budget_usd_per_day",
            "Configured LLM-judge spend budget per day (judge.max_usd_per_day), for alerts.",
            registry=registry,
        )

        self.embedding_texts = Counter(
            "ragpulse_embedding_texts",
            "Texts (with letters) the embedding model encoded, by model.",
            ["model"],
            registry=registry,
        )
        self.embedding_script_mismatch = Counter(
            "ragpulse_embedding_script_mismatch",
            "Encoded texts written in a script the embedding model was not trained on "
            "(e.g. Cyrillic for an English-only model), by model.",
            ["model"],
            registry=registry,
        )
        self.embedding_script_mismatch_ratio = Gauge(
            "ragpulse_embedding_script_mismatch_ratio",
            "Share of the last encoded batch in a script the embedding model was not trained on.",
            ["model"],
            registry=registry,
        )

    def record_embedding_scripts(self, model: str, texts: int, mismatched: int) -> None:
        """Counts one encoded batch (inc(0) creates the series at zero)."""
        self.embedding_texts.labels(model=model).inc(texts)
        self.embedding_script_mismatch.labels(model=model).inc(mismatched)
        if texts:
            self.embedding_script_mismatch_ratio.labels(model=model).set(mismatched / texts)

    def record_labels(self, job: str, foldings: Iterable[Folding]) -> None:
        """One job run's label folding: values seen, kept, and folded by the bound."""
        for f in foldings:
            self.label_values_seen.labels(job=job, label=f.label).set(f.seen)
            self.label_values_kept.labels(job=job, label=f.label).set(len(f.kept))
            self.label_values_folded.labels(job=job, label=f.label).inc(f.capped)

    def record_retries(self, job: str, retries: Mapping[str, int], pending: int) -> None:
        """One judge job run's retries scheduled per metric, and the traces left waiting."""
        for metric, count in retries.items():
            self.judge_retries.labels(job=job, metric=metric).inc(count)
        self.judge_pending_retry.labels(job=job).set(pending)

    def set_judge_budget(self, usd_per_day: float | None) -> None:
        if usd_per_day is not None:
            self.judge_budget.set(usd_per_day)

    def declare_jobs(self, jobs: Sequence[str]) -> None:
        """Create every job's series at zero so rates and absence alerts work from the start."""
        for job in jobs:
            for status in ("ok", "error"):
                self.job_runs.labels(job=job, status=status)
            self.job_duration.labels(job=job)

    def record_job(self, job: str, status: str, seconds: float) -> None:
        self.job_runs.labels(job=job, status=status).inc()
        self.job_duration.labels(job=job).observe(seconds)
        if status == "ok":
            self.job_last_success.labels(job=job).set(time.time())

    def record_judge_call(
        self,
        model: str,
        status: str,
        *,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        cost_usd: float = 0.0,
        latency_s: float | None = None,
    ) -> None:
        self.judge_requests.labels(model=model, status=status).inc()
        # inc(0) still creates the series, so rates and budgets read 0 rather than nothing.
        self.judge_tokens.labels(model=model, kind="prompt").inc(prompt_tokens)
        self.judge_tokens.labels(model=model, kind="completion").inc(completion_tokens)
        self.judge_cost.labels(model=model).inc(cost_usd)
        if latency_s is not None:
            self.judge_latency.observe(latency_s)


class JudgeStateCollector(Collector):
    """The judge client's live state per model, read at scrape time:

    - `ragpulse_judge_concurrency_limit{model}`: requests the model may have in flight now
      (adaptive: halves on timeouts/429/5xx, grows back on success);
    - `ragpulse_judge_structured_output_mode{model,mode}`: 1 for the mode its answers are
      asked in (json_schema, json_object_schema, guided_json, ollama_format, tools, prompt);
    - `ragpulse_judge_structured_output_fallbacks_total{model,from_mode,to_mode}`: a server
      refused a mode and the model moved to the next one.

    `judge` is anything with the `JudgeClient` methods used here (exporters import nothing
    from evaluators).
    """

    def __init__(self, judge: Any) -> None:
        self._judge = judge

    def collect(self) -> Iterator[Metric]:
        limit = GaugeMetricFamily(
            "ragpulse_judge_concurrency_limit",
            "LLM-judge requests each model may have in flight now (adaptive concurrency).",
            labels=["model"],
        )
        for model, value in sorted(self._judge.concurrency_limits().items()):
            limit.add_metric([model], float(value))
        mode = GaugeMetricFamily(
            "ragpulse_judge_structured_output_mode",
            "1 for the structured-output mode each judge model is asked in now.",
            labels=["model", "mode"],
        )
        for model, name in sorted(self._judge.structured_output_modes().items()):
            mode.add_metric([model, name], 1.0)
        fallbacks = CounterMetricFamily(
            "ragpulse_judge_structured_output_fallbacks",
            "Structured-output modes a judge model's server refused (then the next is used).",
            labels=["model", "from_mode", "to_mode"],
        )
        for (model, old, new), count in sorted(self._judge.structured_output_fallbacks.items()):
            fallbacks.add_metric([model, old, new], float(count))
        yield from (limit, mode, fallbacks)
