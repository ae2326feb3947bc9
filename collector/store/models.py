"""SQLAlchemy 2.0 models: the schema of record (changed only through Alembic revisions)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Date,
    DateTime,
    Float,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

JSONType = JSON().with_variant(JSONB(), "postgresql")
# SQLite only autoincrements INTEGER PRIMARY KEY, PostgreSQL wants BIGINT for big tables.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every back end (SQLite stores them naive)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        dict[str, Any]: JSONType,
        list[Any]: JSONType,
        datetime: UTCDateTime,
    }


class Trace(Base):
    """One answered question; a trace sent twice is stored once (unique `trace_id`).

    This is the simple layout SQLite keeps. On PostgreSQL the table is range-partitioned
    by `timestamp` (`collector/store/partitions.py`, rev. 0011): the primary key is
    (id, timestamp), the unique index (trace_id, timestamp), and `trace_id` stays unique
    across partitions through `trace_keys` (`TraceKey`).
    """

    __tablename__ = "traces"
    __table_args__ = (
        # the sessions job reads a conversation's turns by its session (rev. 0017); partial,
        # so traces without a session cost the index nothing
        Index(
            "ix_traces_session_ts",
            "session_id",
            "timestamp",
            postgresql_where=text("session_id IS NOT NULL"),
            sqlite_where=text("session_id IS NOT NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    trace_id: Mapped[str] = mapped_column(String(128), unique=True)
    timestamp: Mapped[datetime] = mapped_column(index=True)
    received_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow, index=True)
    source: Mapped[str] = mapped_column(String(16), default="json")
    question: Mapped[str] = mapped_column(Text)
    answer: Mapped[str | None] = mapped_column(Text)
    # json, not jsonb, on PostgreSQL: ~8 KB written once and read back whole, never queried
    # inside, and jsonb's conversion was a third of the server's cost per trace (rev. 0005)
    contexts: Mapped[list[Any] | None] = mapped_column(JSON)
    reference: Mapped[str | None] = mapped_column(Text)
    relevant_ids: Mapped[list[Any] | None] = mapped_column(JSONType)
    relevance: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    # indexed with the timestamp where set (rev. 0017; rev. 0005 had dropped a plain index)
    session_id: Mapped[str | None] = mapped_column(String(256))
    user_id: Mapped[str | None] = mapped_column(String(256))
    turn: Mapped[int | None] = mapped_column(Integer)
    judge_decision: Mapped[bool | None] = mapped_column(Boolean)
    judge_score: Mapped[float | None] = mapped_column(Float)
    judge_model: Mapped[str | None] = mapped_column(String(256))
    judge_latency_ms: Mapped[float | None] = mapped_column(Float)
    judge_label: Mapped[bool | None] = mapped_column(Boolean)
    cache_hit: Mapped[bool | None] = mapped_column(Boolean)
    cache_similarity: Mapped[float | None] = mapped_column(Float)
    model: Mapped[str | None] = mapped_column(String(256))
    latency_ms: Mapped[float | None] = mapped_column(Float)
    # per-stage latencies when the trace sent an object ({"retrieval": 172, ...}; rev. 0006)
    latency_stages: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    usage: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    tags: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    meta: Mapped[dict[str, Any] | None] = mapped_column("metadata", JSONType)
    # the url(s) of the document(s) shown to the user: ground truth of last resort (rev. 0006)
    shown_url: Mapped[list[Any] | None] = mapped_column(JSONType)
    feedback_rating: Mapped[float | None] = mapped_column(Float)
    feedback_comment: Mapped[str | None] = mapped_column(Text)
    # OTLP traces only: span id -> that span's contribution. The stored fields are a pure
    # function of this set, so fragments merge in any order and a replay changes nothing.
    spans: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    # evaluation results the application emitted itself (OTel gen_ai.evaluation.result):
    # name -> {"score", "label", "explanation"}; the `external:<name>` series (rev. 0007)
    evaluations: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    # OTLP traces that are no user request (index building, batch embedding, health
    # checks): why (`collector.ingest.decode.requests`); NULL for a request. Jobs and
    # sampling skip them (rev. 0012)
    not_request: Mapped[str | None] = mapped_column(String(32))


class Feedback(Base):
    """A feedback event as received; applied to its trace whenever both are present."""

    __tablename__ = "feedback"
    __table_args__ = (UniqueConstraint("event_hash", name="uq_feedback_event_hash"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    event_hash: Mapped[str] = mapped_column(String(64))
    trace_id: Mapped[str] = mapped_column(String(128), index=True)
    timestamp: Mapped[datetime] = mapped_column()
    received_at: Mapped[datetime] = mapped_column(default=utcnow)
    judge_label: Mapped[bool | None] = mapped_column(Boolean)
    relevant_ids: Mapped[list[Any] | None] = mapped_column(JSONType)
    rating: Mapped[float | None] = mapped_column(Float)
    comment: Mapped[str | None] = mapped_column(Text)
    applied: Mapped[bool] = mapped_column(Boolean, default=False, index=True)


class DeadLetter(Base):
    """A message that could not be accepted, kept whole with a precise reason."""

    __tablename__ = "dead_letters"
    __table_args__ = (
        UniqueConstraint("topic", "partition", "offset", name="uq_dead_letters_position"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    topic: Mapped[str] = mapped_column(String(256))
    partition: Mapped[int] = mapped_column(Integer)
    offset: Mapped[int] = mapped_column(BigInteger)
    key: Mapped[bytes | None] = mapped_column(LargeBinary)
    raw: Mapped[bytes] = mapped_column(LargeBinary)
    reason: Mapped[str] = mapped_column(String(64), index=True)
    detail: Mapped[str] = mapped_column(Text)
    received_at: Mapped[datetime] = mapped_column(default=utcnow)


class SampleRecord(Base):
    """Which trace was sampled for which purpose (deterministic, so replays agree)."""

    __tablename__ = "samples"
    __table_args__ = (UniqueConstraint("trace_id", "purpose", name="uq_samples_trace_purpose"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    trace_id: Mapped[str] = mapped_column(String(128), index=True)
    purpose: Mapped[str] = mapped_column(String(64))
    sampled_at: Mapped[datetime] = mapped_column(default=utcnow)


class MetricResult(Base):
    """One metric value for one window and group, with its sample count and 95% CI."""

    __tablename__ = "metric_results"
    __table_args__ = (
        Index("ix_metric_results_lookup", "metric", "window", "group_key", "computed_at"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    job: Mapped[str] = mapped_column(String(64))
    metric: Mapped[str] = mapped_column(String(128))
    window: Mapped[str] = mapped_column(String(16))
    group_key: Mapped[str] = mapped_column(String(256), default="")
    group_labels: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    value: Mapped[float | None] = mapped_column(Float)
    n: Mapped[int] = mapped_column(Integer, default=0)
    skipped: Mapped[int] = mapped_column(Integer, default=0)
    errors: Mapped[int] = mapped_column(Integer, default=0)
    skip_reasons: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    ci_lower: Mapped[float | None] = mapped_column(Float)
    ci_upper: Mapped[float | None] = mapped_column(Float)
    window_start: Mapped[datetime] = mapped_column()
    window_end: Mapped[datetime] = mapped_column()
    computed_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    signature: Mapped[str] = mapped_column(String(512))


class Judgment(Base):
    """Every LLM-judge call and its outcome; successful rows are also the cache."""

    __tablename__ = "judgments"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    cache_key: Mapped[str] = mapped_column(String(64), index=True)
    metric: Mapped[str] = mapped_column(String(128))
    model: Mapped[str] = mapped_column(String(256))
    prompt_version: Mapped[str] = mapped_column(String(64))
    input_hash: Mapped[str] = mapped_column(String(64))
    temperature: Mapped[float] = mapped_column(Float)
    trace_id: Mapped[str | None] = mapped_column(String(128), index=True)
    status: Mapped[str] = mapped_column(String(32))
    error_type: Mapped[str | None] = mapped_column(String(128))
    output: Mapped[str | None] = mapped_column(Text)
    parsed: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    prompt_tokens: Mapped[int | None] = mapped_column(Integer)
    completion_tokens: Mapped[int | None] = mapped_column(Integer)
    cost_usd: Mapped[float | None] = mapped_column(Float)
    latency_ms: Mapped[float | None] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)


class Run(Base):
    """An offline evaluation or benchmark run and its aggregate results."""

    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(32), default="running")
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column()
    dataset: Mapped[str | None] = mapped_column(Text)
    metrics: Mapped[list[Any] | None] = mapped_column(JSONType)
    config: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    aggregate: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    signature: Mapped[str | None] = mapped_column(String(512))


class JobOutcome(Base):
    """A scheduled job's per-trace outcomes, computed once per (trace, updated_at).

    The incremental state of the jobs: a run evaluates only traces that are new or changed
    since the job's watermark, stores their outcomes here and aggregates windows from the
    cache. `outcomes` maps metric -> number, or {"skipped": reason} / {"error": type}.
    On PostgreSQL range-partitioned by `ts` (the trace's timestamp) like `traces`, unique
    on (job, trace_id, ts); one job's runs are serialized by its lock, and the writer
    removes a trace's row under an older `ts` when the trace's timestamp moved (rev. 0011).
    """

    __tablename__ = "job_outcomes"
    __table_args__ = (
        UniqueConstraint("job", "trace_id", name="uq_job_outcomes_job_trace"),
        Index("ix_job_outcomes_job_ts", "job", "ts"),
        Index("ix_job_outcomes_job_updated", "job", "trace_updated_at"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    job: Mapped[str] = mapped_column(String(64))
    trace_id: Mapped[str] = mapped_column(String(128))
    trace_updated_at: Mapped[datetime] = mapped_column()
    ts: Mapped[datetime] = mapped_column()
    groups: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    outcomes: Mapped[dict[str, Any]] = mapped_column(JSONType)
    # the trace's slice dimensions for `ragpulse explain` (rev. 0007)
    slices: Mapped[dict[str, Any] | None] = mapped_column(JSONType)


BUCKET_S = 60
"""The width of a `job_buckets` row, in seconds."""


class JobBucket(Base):
    """Per-minute sufficient statistics of one job's metric in one group (rev. 0014).

    `bucket` is floor(ts / 60) of the traces counted; metric "" counts the group's traces.
    Changed only by adding or moving a trace's contribution, in the transaction that stores
    its outcomes (`collector.jobs.buckets.store`), so windows are sums of rows.
    """

    __tablename__ = "job_buckets"

    job: Mapped[str] = mapped_column(String(64), primary_key=True)
    bucket: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    metric: Mapped[str] = mapped_column(String(128), primary_key=True)
    grp: Mapped[str] = mapped_column(String(512), primary_key=True)
    outcome: Mapped[str] = mapped_column(String(300), primary_key=True)
    """"" for the scored values' sums; "skipped:<reason>" / "error:<type>": n counts them."""
    n: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    total: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    squares: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    positives: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    log_total: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    log_squares: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")


class JobBucketBin(Base):
    """Per-minute DDSketch bins of one job's quantile metric in one group (rev. 0015).

    For the scored values of a metric registered with `quantiles=True` (latencies): how
    many fell in `bin` (`evaluators.quantiles.bin_of`: signed, in the values' order) in
    the minute `bucket`, per group like `job_buckets`. Counts add, so a window's bins are
    the sums of its minutes' and its quantiles come from them; changed like the sums, in
    the same transaction (`collector.jobs.buckets.store`). A row whose count reaches 0 is
    deleted.
    """

    __tablename__ = "job_bucket_bins"

    job: Mapped[str] = mapped_column(String(64), primary_key=True)
    bucket: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    metric: Mapped[str] = mapped_column(String(128), primary_key=True)
    grp: Mapped[str] = mapped_column(String(512), primary_key=True)
    bin: Mapped[int] = mapped_column(Integer, primary_key=True)
    n: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")


class TraceKey(Base):
    """PostgreSQL only: every stored trace id, once (rev. 0011).

    A unique index on a partitioned table must contain the partition key, so `traces`
    alone could hold one trace id in two daily partitions. This narrow, unpartitioned table
    keeps the id unique: triggers on `traces` claim a row's key before it is inserted (a
    row whose key is taken is silently not stored, as `ON CONFLICT DO NOTHING` would) and
    release it when the row is deleted (a row moving to another day's partition is
    released and claimed again, so `day` follows it); retention deletes the keys of a
    dropped partition by its day.
    """

    __tablename__ = "trace_keys"

    trace_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    # the UTC day of the trace's partition: retention deletes a dropped day's keys by it
    day: Mapped[date] = mapped_column(Date, index=True)


class JobState(Base):
    """Per job: how far it has read the traces and how its last run went (skips included)."""

    __tablename__ = "job_state"

    job: Mapped[str] = mapped_column(String(64), primary_key=True)
    watermark: Mapped[datetime | None] = mapped_column()
    last_run_at: Mapped[datetime | None] = mapped_column()
    last_status: Mapped[str | None] = mapped_column(String(16))
    last_message: Mapped[str | None] = mapped_column(Text)
    last_duration_s: Mapped[float | None] = mapped_column(Float)
    aggregated_stores: Mapped[int | None] = mapped_column(BigInteger)
    """Sharded jobs: the sum of `JobShard.stores` the last aggregation read before it
    tailed the outcomes (a larger sum now: outcomes it has not counted). Rev. 0010."""


class JobShard(Base):
    """One shard of a job's trace space (`collector.jobs.sharding.leases`): who leases it until
    when, when a worker last evaluated it and the newest trace version done in it."""

    __tablename__ = "job_shards"

    job: Mapped[str] = mapped_column(String(64), primary_key=True)
    shard: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner: Mapped[str | None] = mapped_column(String(128))
    lease_until: Mapped[datetime | None] = mapped_column()
    checked_at: Mapped[datetime | None] = mapped_column()
    watermark: Mapped[datetime | None] = mapped_column()
    stores: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    """Batches of outcomes stored from the shard (`JobState.aggregated_stores`)."""


class SloEvent(Base):
    """One trace's SLI event of one SLO, recorded once (rev. 0013).

    The primary key refuses a second recording of the same (slo, trace): a job that re-runs,
    a worker that restarts or an outcome replayed changes no counter
    (`collector.slo.events`). Rows older than `slo.event_retention` are deleted; the
    counts they added stay in `SloEventCount`."""

    __tablename__ = "slo_events"
    __table_args__ = (Index("ix_slo_events_ts", "ts"),)

    slo: Mapped[str] = mapped_column(String(64), primary_key=True)
    trace_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    tenant: Mapped[str] = mapped_column(String(128))
    good: Mapped[bool] = mapped_column(Boolean)
    ts: Mapped[datetime] = mapped_column()


class SloEventCount(Base):
    """Events recorded per SLO, tenant and outcome (`good`/`bad`): the counters behind
    `ragpulse_slo_events_total`, monotonic across restarts since they live here (rev. 0013)."""

    __tablename__ = "slo_event_counts"

    slo: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant: Mapped[str] = mapped_column(String(128), primary_key=True)
    outcome: Mapped[str] = mapped_column(String(8), primary_key=True)
    count: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")


class JobWorker(Base):
    """A worker process running a job, counted as live until `alive_until` (fair shares)."""

    __tablename__ = "job_workers"

    job: Mapped[str] = mapped_column(String(64), primary_key=True)
    worker: Mapped[str] = mapped_column(String(128), primary_key=True)
    alive_until: Mapped[datetime] = mapped_column()


class EmbeddingRow(Base):
    """A text's embedding under one model, kept so no text is encoded twice (restarts too).

    `text_hash` is the SHA-256 hex of the UTF-8 text; `vector` the float32 row as raw
    bytes (native little-endian, `dim * 4` bytes, L2-normalized as the embedder returns it).
    """

    __tablename__ = "embeddings"
    __table_args__ = (UniqueConstraint("model", "text_hash", name="uq_embeddings_model_text"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    model: Mapped[str] = mapped_column(String(256))
    text_hash: Mapped[str] = mapped_column(String(64))
    vector: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)


class EvaluationEventRow(Base):
    """An evaluation result the application emitted as an OTLP log record
    (`gen_ai.evaluation.result`), kept as received: it may arrive before its trace, and
    `traces.evaluations` is recomputed from these rows and the trace's spans (rev. 0008)."""

    __tablename__ = "evaluation_events"
    __table_args__ = (UniqueConstraint("event_hash", name="uq_evaluation_events_hash"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    event_hash: Mapped[str] = mapped_column(String(64))
    trace_id: Mapped[str] = mapped_column(String(128), index=True)
    span_id: Mapped[str | None] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(128))
    time_ns: Mapped[int] = mapped_column(BigInteger)
    score: Mapped[float | None] = mapped_column(Float)
    label: Mapped[str | None] = mapped_column(String(128))
    explanation: Mapped[str | None] = mapped_column(Text)
    error_type: Mapped[str | None] = mapped_column(String(128))
    received_at: Mapped[datetime] = mapped_column(default=utcnow)


class HumanLabel(Base):
    """A human's value of a judge metric on a trace (issue #19), from a trace's or a
    feedback event's `labels`: one row per (trace, metric, labeler) — the latest label of
    that labeler wins; `labeler` is "" when none was given (rev. 0009)."""

    __tablename__ = "human_labels"
    __table_args__ = (
        UniqueConstraint("trace_id", "metric", "labeler", name="uq_human_labels_key"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    trace_id: Mapped[str] = mapped_column(String(128), index=True)
    metric: Mapped[str] = mapped_column(String(128))
    labeler: Mapped[str] = mapped_column(String(128), default="")
    value: Mapped[float] = mapped_column(Float)
    timestamp: Mapped[datetime] = mapped_column()
    received_at: Mapped[datetime] = mapped_column(default=utcnow)


class Topic(Base):
    """A topic of the users' questions (issue 41): a cluster of their embeddings, with an id
    kept across re-clusterings (`evaluators.topics.evolve`) and never given to another topic.

    `keywords` is the label: language ("ru", "en") -> its c-TF-IDF keywords, best first;
    `examples` a few sampled questions nearest the centroid; `centroid` the unit-norm mean
    embedding as float32 bytes like `embeddings.vector`; `size` its sampled questions at the
    last re-clustering that kept it (`last_seen`); `active` false once a re-clustering no
    longer finds it. `model`, `method` and `params` are the clustering's signature: centroids
    of another embedding model are not comparable, so a change of model starts new topics
    (rev. 0016). `name` is the judge's short name for it, `{"names": {language: name},
    "model", "prompt"}`, NULL until named; kept across re-clusterings (rev. 0018).
    """

    __tablename__ = "topics"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    keywords: Mapped[dict[str, Any]] = mapped_column(JSONType)
    examples: Mapped[list[Any]] = mapped_column(JSONType)
    centroid: Mapped[bytes] = mapped_column(LargeBinary)
    size: Mapped[int] = mapped_column(Integer)
    first_seen: Mapped[datetime] = mapped_column()
    last_seen: Mapped[datetime] = mapped_column()
    model: Mapped[str] = mapped_column(String(256))
    method: Mapped[str] = mapped_column(String(64))
    params: Mapped[dict[str, Any]] = mapped_column(JSONType)
    name: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)


class TraceTopic(Base):
    """A trace's topic: the nearest active topic's centroid to its question's embedding
    (`topic_id` NULL: every centroid was below `topics.min_similarity`, an outlier), with
    that cosine; rewritten for every trace of the look-back after a re-clustering (rev. 0016)."""

    __tablename__ = "trace_topics"

    trace_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    topic_id: Mapped[int | None] = mapped_column(Integer, index=True)
    similarity: Mapped[float] = mapped_column(Float)
    assigned_at: Mapped[datetime] = mapped_column(index=True)
