"""The OTLP/HTTP receiver (`ragpulse receive`): where it listens, with the same TLS, auth
and connection bounds as `/metrics`, how big a request may be, and how long a request
waits for Kafka's acknowledgement."""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator

from collector.settings.exporter import HttpEndpointSettings


class ReceiverSettings(HttpEndpointSettings):
    port: int = Field(4318, ge=0, le=65535)
    """4318 is the OTLP/HTTP port of the OpenTelemetry specification."""
    request_timeout_s: float = Field(30.0, gt=0)
    """Longest time a request may take to arrive and be acknowledged by Kafka, in seconds."""
    max_body_bytes: int | None = Field(None, ge=1)
    """Largest request body, compressed and after gzip decompression (413 past either);
    unset: `kafka.max_message_bytes`, the largest message the consumer accepts."""
    ack_timeout_s: float = Field(10.0, gt=0)
    """Longest a request waits for Kafka to acknowledge its message before it is answered
    503 (the client retries)."""
    retry_after_s: int = Field(5, ge=1, le=3600)
    """`Retry-After` of a 503 (Kafka unreachable or not acknowledging)."""

    @model_validator(mode="after")
    def _ack_before_deadline(self) -> Self:
        if self.ack_timeout_s >= self.request_timeout_s:
            raise ValueError(
                f"ack_timeout_s ({self.ack_timeout_s:g}) must be shorter than request_timeout_s "
                f"({self.request_timeout_s:g}), or the connection is cut before the answer"
            )
        return self
