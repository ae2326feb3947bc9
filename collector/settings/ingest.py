"""How traces come in: the Kafka consumer (`kafka`), the limits of decoding a message
(`decode`), which traces are sampled for which evaluation (`sampling`), and where a
trace's ground truth comes from (`ground_truth`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from collector.settings.fields import CSV, Group, split_csv
from evaluators.ground_truth import SOURCES as GROUND_TRUTH_SOURCES
from evaluators.ground_truth import check_priority


class KafkaSettings(Group):
    bootstrap_servers: CSV = ["127.0.0.1:9092"]
    """Kafka brokers to connect to (host:port, comma-separated)."""
    topics: CSV = ["rag.traces", "rag.feedback", "otlp_spans"]
    """Topics consumed: traces, feedback and OTLP spans (and otlp_logs when listed)."""
    feedback_topic: str = "rag.feedback"
    """The topic whose messages are feedback events, not traces."""
    otlp_topic: str = "otlp_spans"
    """The topic whose messages are OTLP span batches (a Collector's Kafka exporter)."""
    otlp_encoding: Literal["otlp_proto", "otlp_json"] = "otlp_proto"
    """Encoding of the OTLP messages: otlp_proto (binary protobuf) or otlp_json."""
    otlp_logs_topic: str = "otlp_logs"
    """Messages on this topic are OTLP log requests (`ExportLogsServiceRequest`, protobuf
    or JSON, as the Collector's Kafka exporter writes logs); their `gen_ai.evaluation.result`
    records become external scores. Read only when it is listed in `topics`."""
    group_id: str = "ragpulse"
    """Kafka consumer group: replicas sharing it split the partitions."""
    client_id: str = "ragpulse"
    """Kafka client id (shows in the brokers' logs and quotas)."""
    max_poll_records: int = Field(5000, ge=1)
    """Messages fetched per poll: the batch stored and committed together."""
    max_poll_interval_ms: int = Field(300_000, ge=1000)
    """Longest time between polls before Kafka considers the consumer dead."""
    session_timeout_ms: int = Field(10_000, ge=1000)
    """Heartbeat timeout after which the group rebalances without this consumer."""
    poll_timeout_ms: int = Field(500, ge=1)
    """How long one poll waits for messages when there are none."""
    max_message_bytes: int = Field(1024 * 1024, ge=1)
    """Largest message accepted; a larger one is a dead letter."""
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
    """Kafka security protocol (TLS and/or SASL)."""
    sasl_mechanism: str | None = None
    """SASL mechanism (e.g. PLAIN, SCRAM-SHA-512) when SASL is used."""
    sasl_username: str | None = None
    """SASL user name."""
    sasl_password: SecretStr | None = None
    """SASL password."""

    _csv = field_validator("bootstrap_servers", "topics", mode="before")(split_csv)

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


class DecodeSettings(Group):
    max_depth: int = Field(64, ge=2, le=200)
    """Deepest JSON nesting accepted in a message (the top-level object is 1); deeper ones
    are dead letters (`too_deep`). Far below what every writer and reader of the stored
    JSON handles (orjson writes 254 levels); real traces nest under 10."""


class SamplingSettings(Group):
    real_users_benchmark: float = Field(0.1, ge=0.0, le=1.0)
    """Share of traces (0-1, decided on the trace id's hash) the real_users_benchmark job scores."""
    judge: float = Field(0.05, ge=0.0, le=1.0)
    """Share of traces (0-1, decided on the trace id's hash) sent to the LLM judge."""
    tag_filters: dict[str, list[str]] = {}
    """Only traces whose tag has one of the listed values are sampled (all when empty)."""


class GroundTruthSettings(Group):
    priority: CSV = list(GROUND_TRUTH_SOURCES)
    """Where a trace's ground truth comes from, first available wins: `relevance` (graded),
    `relevant_ids` (the trace's own, replaced by feedback's when feedback sends them),
    `shown_url` (the document shown to the user, seed 004 §7). Leave a source out to
    ignore it (e.g. `relevance,relevant_ids` never uses shown urls)."""

    _csv = field_validator("priority", mode="before")(split_csv)

    @field_validator("priority")
    @classmethod
    def _sources(cls, value: list[str]) -> list[str]:
        check_priority(value)
        if len(set(value)) != len(value):
            raise ValueError("a ground-truth source is listed twice")
        if not value:
            raise ValueError("at least one ground-truth source is needed")
        return value
