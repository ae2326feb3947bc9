"""What goes out of ragpulse: the `/metrics` endpoint (`exporter`), the service's own
OpenTelemetry traces (`otel`) and the `gen_ai.evaluation.result` events
(`evaluation_events`)."""

from __future__ import annotations

from pathlib import Path
from typing import Self

from pydantic import Field, SecretStr, field_validator, model_validator

from collector.settings.fields import CSV, Group, split_csv


class HttpEndpointSettings(Group):
    """An HTTP endpoint of ragpulse: address, TLS, basic auth, connection bounds (the
    `/metrics` endpoint here, the OTLP receiver in `receiver.py`)."""

    host: str = "127.0.0.1"
    """Address the HTTP endpoint listens on."""
    port: int = Field(9464, ge=0, le=65535)
    """Port of the HTTP endpoint (0: a free one)."""
    tls_cert_file: Path | None = None
    """PEM certificate: serve HTTPS (with tls_key_file)."""
    tls_key_file: Path | None = None
    """PEM private key of tls_cert_file."""
    basic_auth_username: str | None = None
    """Require HTTP basic auth with this user (and basic_auth_password)."""
    basic_auth_password: SecretStr | None = None
    """Basic auth guards every path but /healthz and /readyz."""
    max_connections: int = Field(64, ge=1)
    """Connections served at once (one thread each); a newer one cuts the oldest, and is
    refused (503) only when no slot frees within half a second."""
    request_timeout_s: float = Field(10.0, gt=0)
    """Longest a connection may take from accept to response, TLS handshake included:
    idle and slow clients are cut off after it."""

    @model_validator(mode="after")
    def _pairs(self) -> Self:
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise ValueError("tls_cert_file and tls_key_file must be set together")
        if (self.basic_auth_username is None) != (self.basic_auth_password is None):
            raise ValueError("basic_auth_username and basic_auth_password must be set together")
        return self


class ExporterSettings(HttpEndpointSettings):
    """The `/metrics` endpoint (with `/healthz` and `/readyz`)."""


class OtelSettings(Group):
    endpoint: str | None = None
    """OTLP/HTTP endpoint for ragpulse's own spans (unset: none exported)."""
    service_name: str = "ragpulse"
    """service.name of ragpulse's own spans."""


class EvaluationEventsSettings(Group):
    """OpenTelemetry `gen_ai.evaluation.result` events, one per evaluated trace and metric
    (`exporters/evaluation_events.py`). The OTLP endpoint, protocol, headers and timeout
    come from the standard `OTEL_EXPORTER_OTLP_*` / `OTEL_EXPORTER_OTLP_LOGS_*` variables."""

    enabled: bool = False
    """Export every stored score as a gen_ai.evaluation.result event over OTLP."""
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

    _csv = field_validator("jobs", mode="before")(split_csv)

    @model_validator(mode="after")
    def _batch_fits(self) -> EvaluationEventsSettings:
        if self.batch_size > self.queue_size:
            raise ValueError(
                f"batch_size ({self.batch_size}) must not exceed queue_size ({self.queue_size})"
            )
        return self
