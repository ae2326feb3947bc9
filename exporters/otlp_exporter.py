"""The OTLP log exporter the standard environment variables ask for.

`OTEL_EXPORTER_OTLP_LOGS_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`, else
`http/protobuf` (the SDK's default). `grpc` needs the package
`opentelemetry-exporter-otlp-proto-grpc` (not a dependency of ragpulse); `http/json` has
no exporter in the Python SDK. Endpoint, headers, timeout, compression and certificates
are read by the exporter itself from `OTEL_EXPORTER_OTLP_[LOGS_]*`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from collector.settings import ConfigError

HTTP_PROTOBUF = "http/protobuf"
GRPC = "grpc"


def protocol(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    value = env.get("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    return (value or HTTP_PROTOBUF).strip().lower()


def log_exporter(environ: Mapping[str, str] | None = None) -> Any:
    """A new OTLP `LogRecordExporter` for the configured protocol; `ConfigError` when the
    protocol is unknown or its package is missing."""
    chosen = protocol(environ)
    if chosen == HTTP_PROTOBUF:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

        return OTLPLogExporter()
    if chosen == GRPC:
        try:
            from opentelemetry.exporter.otlp.proto.grpc._log_exporter import (
                OTLPLogExporter as GrpcLogExporter,
            )
        except ImportError:
            raise ConfigError(
                "OTEL_EXPORTER_OTLP_PROTOCOL=grpc needs the package "
                "opentelemetry-exporter-otlp-proto-grpc; install it or use http/protobuf"
            ) from None
        return GrpcLogExporter()
    raise ConfigError(
        f"OTLP protocol {chosen!r} is not supported for evaluation events "
        f"(use {HTTP_PROTOBUF} or {GRPC})"
    )
