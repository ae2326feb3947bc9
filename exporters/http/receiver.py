"""The OTLP/HTTP receiver's endpoint: `POST /v1/traces` and `/v1/logs` (to Kafka), beside
`/metrics`, `/healthz` and `/readyz` of its process, with the auth, TLS and connection
bounds of the `/metrics` endpoint (`receiver.*` settings instead of `exporter.*`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import Any

from prometheus_client import CollectorRegistry

from collector.ingest.otlp_http.body import answer_encoding, drain
from collector.ingest.otlp_http.handler import OtlpHandler
from collector.ingest.otlp_http.responses import status
from collector.ingest.otlp_http.signals import SIGNALS
from collector.settings import ReceiverSettings
from exporters.http.app import Readiness, StartResponse, WSGIApp, build_app
from exporters.http.auth import UNAUTHORIZED_HEADERS, expected_credentials, refused
from exporters.http.server import MetricsServer, credentials, start_endpoint


def _line(code: int) -> str:
    return f"{code} {HTTPStatus(code).phrase}"


def build_receiver_app(
    handler: OtlpHandler,
    registry: CollectorRegistry,
    readiness: Callable[[], Readiness],
    basic_auth: tuple[str, str] | None = None,
) -> WSGIApp:
    """The export paths, then the endpoint app (`build_app`) for every other path."""
    rest = build_app(registry, readiness, basic_auth)
    expected = expected_credentials(basic_auth)

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        signal = SIGNALS.get(environ.get("PATH_INFO", "/"))
        if signal is None:
            return rest(environ, start_response)
        content_type = environ.get("CONTENT_TYPE", "")
        early: tuple[int, str, list[tuple[str, str]]] | None = None
        if refused(signal.path, environ.get("HTTP_AUTHORIZATION", ""), expected):
            early = (401, "unauthorized", list(UNAUTHORIZED_HEADERS[:1]))
        elif environ.get("REQUEST_METHOD") != "POST":
            early = (405, f"{signal.path} takes POST", [("Allow", "POST")])
        if early is not None:
            code, reason, headers = early
            handler.stats.requests.labels(signal.name, str(code)).inc()
            drain(environ["wsgi.input"], _length(environ.get("CONTENT_LENGTH")))
            kind, body = status(code, reason, answer_encoding(content_type))
            start_response(_line(code), [*headers, ("Content-Type", kind)])
            return [body]
        reply = handler.handle(
            signal,
            content_type=content_type,
            content_encoding=environ.get("HTTP_CONTENT_ENCODING", ""),
            content_length=environ.get("CONTENT_LENGTH"),
            stream=environ["wsgi.input"],
        )
        start_response(_line(reply.status), [("Content-Type", reply.content_type), *reply.headers])
        return [reply.body]

    return app


def _length(value: str | None) -> int:
    try:
        return max(0, int(value or 0))
    except ValueError:
        return 0


def serve_receiver(
    handler: OtlpHandler,
    registry: CollectorRegistry,
    settings: ReceiverSettings,
    readiness: Callable[[], Readiness],
) -> MetricsServer:
    """Start the receiver's endpoint described by `settings` on a background thread."""
    app = build_receiver_app(handler, registry, readiness, credentials(settings))
    return start_endpoint(app, settings, what="OTLP/HTTP", env="RAGPULSE_RECEIVER__")
