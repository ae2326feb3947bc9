"""The HTTP endpoint of `ragpulse run`: `/metrics`, `/healthz`, `/readyz`.

A small WSGI app on a threading `wsgiref` server: prometheus-client's exposition for
`/metrics`, optional HTTP basic auth (constant-time compare) and optional TLS.
`/healthz` answers 200 while the process serves; `/readyz` asks a callback and answers
503 with the reasons when the service is not ready.
"""

from __future__ import annotations

import base64
import hmac
import json
import logging
import ssl
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest, make_wsgi_app

logger = logging.getLogger(__name__)

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


@dataclass(frozen=True)
class Readiness:
    ready: bool
    checks: dict[str, str] = field(default_factory=dict)


def always_ready() -> Readiness:
    return Readiness(True, {})


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("http %s", format % args)


def scrape(registry: CollectorRegistry, quality: Any = None) -> bytes:
    """The `/metrics` body: the registry's series, then the pre-rendered quality families
    (`QualityCollector.render()`, kept out of the registry so they are formatted once)."""
    body = generate_latest(registry)
    return body + quality.render() if quality is not None else body


def build_app(
    registry: CollectorRegistry,
    readiness: Callable[[], Readiness] = always_ready,
    basic_auth: tuple[str, str] | None = None,
    quality: Any = None,
) -> WSGIApp:
    """`quality` (a `QualityCollector` not registered on `registry`) is served pre-rendered,
    always in the text format 0.0.4 (which Prometheus accepts whatever it asks for)."""
    metrics_app = make_wsgi_app(registry)
    expected = None
    if basic_auth is not None:
        expected = "Basic " + base64.b64encode(f"{basic_auth[0]}:{basic_auth[1]}".encode()).decode()

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "/")
        if expected is not None and path != "/healthz":
            given = environ.get("HTTP_AUTHORIZATION", "")
            if not hmac.compare_digest(given.encode(), expected.encode()):
                start_response(
                    "401 Unauthorized",
                    [
                        ("WWW-Authenticate", 'Basic realm="ragpulse"'),
                        ("Content-Type", "text/plain"),
                    ],
                )
                return [b"unauthorized\n"]
        if path == "/metrics":
            if quality is not None:
                start_response("200 OK", [("Content-Type", CONTENT_TYPE_LATEST)])
                return [scrape(registry, quality)]
            result: Iterable[bytes] = metrics_app(environ, start_response)
            return result
        if path == "/healthz":
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [b"ok\n"]
        if path == "/readyz":
            try:
                state = readiness()
            except Exception as exc:
                logger.exception("readiness check failed")
                state = Readiness(False, {"readiness": f"error: {type(exc).__name__}"})
            status = "200 OK" if state.ready else "503 Service Unavailable"
            body = json.dumps({"ready": state.ready, "checks": state.checks}).encode()
            start_response(status, [("Content-Type", "application/json")])
            return [body]
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found: try /metrics, /healthz or /readyz\n"]

    return app


class MetricsServer:
    """Serves the app on a background thread; `port=0` picks a free port (see `.port`)."""

    def __init__(
        self,
        app: WSGIApp,
        host: str = "127.0.0.1",
        port: int = 9464,
        *,
        tls_cert_file: Path | None = None,
        tls_key_file: Path | None = None,
    ) -> None:
        self._server = make_server(
            host, port, app, server_class=_ThreadingWSGIServer, handler_class=_QuietHandler
        )
        self.tls = tls_cert_file is not None
        if tls_cert_file is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(str(tls_cert_file), str(tls_key_file) if tls_key_file else None)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.host = host
        self.port = int(self._server.server_address[1])
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    def start(self) -> MetricsServer:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="ragpulse-http", daemon=True
        )
        self._thread.start()
        logger.info("serving /metrics on %s", self.url)
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)


def serve(
    registry: CollectorRegistry,
    settings: Any,
    readiness: Callable[[], Readiness] = always_ready,
    quality: Any = None,
) -> MetricsServer:
    """Start the endpoint described by `settings.exporter` (an `ExporterSettings`)."""
    auth = None
    if settings.basic_auth_username is not None and settings.basic_auth_password is not None:
        auth = (settings.basic_auth_username, settings.basic_auth_password.get_secret_value())
    app = build_app(registry, readiness, auth, quality)
    return MetricsServer(
        app,
        settings.host,
        settings.port,
        tls_cert_file=settings.tls_cert_file,
        tls_key_file=settings.tls_key_file,
    ).start()
