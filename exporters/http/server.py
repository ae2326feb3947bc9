"""`MetricsServer`: the endpoint's app served on a background thread by the bounded
server, over TLS when a certificate is configured; `serve` starts it from the settings."""

from __future__ import annotations

import logging
import ssl
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler

from prometheus_client import CollectorRegistry

from collector.errors import UserError
from collector.settings import HttpEndpointSettings
from exporters.http.app import Readiness, WSGIApp, always_ready, build_app
from exporters.http.bounded import BoundedWSGIServer

logger = logging.getLogger(__name__)


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("http %s", format % args)


def _tls_context(cert_file: Path, key_file: Path | None, env: str) -> ssl.SSLContext:
    for path in (cert_file, key_file):
        if path is not None and not path.is_file():
            raise UserError(f"TLS file {path} does not exist ({env}TLS_*_FILE)")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(str(cert_file), str(key_file) if key_file else None)
    except (OSError, ssl.SSLError) as exc:
        raise UserError(
            f"cannot use the TLS certificate {cert_file} with the key {key_file}: they are not "
            f"a matching PEM certificate and private key ({exc})"
        ) from None
    return context


class MetricsServer:
    """Serves the app on a background thread; `port=0` picks a free port (see `.port`).

    At most `max_connections` connections are served at once (a newer one cuts the oldest),
    each within `request_timeout_s` from accept to response, the TLS handshake included.
    `what` and `env` (the settings' variable prefix) name the endpoint in errors and logs."""

    def __init__(
        self,
        app: WSGIApp,
        host: str = "127.0.0.1",
        port: int = 9464,
        *,
        tls_cert_file: Path | None = None,
        tls_key_file: Path | None = None,
        max_connections: int = 64,
        request_timeout_s: float = 10.0,
        what: str = "/metrics",
        env: str = "RAGPULSE_EXPORTER__",
    ) -> None:
        context = None
        if tls_cert_file is not None:
            context = _tls_context(tls_cert_file, tls_key_file, env)
        try:
            self._server = BoundedWSGIServer(
                (host, port),
                _QuietHandler,
                max_connections=max_connections,
                request_timeout_s=request_timeout_s,
                tls=context,
            )
        except OSError as exc:
            raise UserError(
                f"cannot serve {what} on {host}:{port}: {exc.strerror or exc} "
                f"(choose another {env}HOST/PORT)"
            ) from None
        self._server.set_app(app)
        self.tls = context is not None
        self.what = what
        self.host = host
        self.port = int(self._server.server_address[1])
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    @property
    def refused(self) -> int:
        """Connections refused because `max_connections` were being served and none ended."""
        return self._server.refused

    @property
    def evicted(self) -> int:
        """Connections cut to make room for a newer one."""
        return self._server.evicted

    @property
    def timed_out(self) -> int:
        """Connections cut at their deadline."""
        return self._server.timed_out

    @property
    def connections(self) -> int:
        """Connections being served now."""
        return self._server.connections

    def start(self) -> MetricsServer:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="ragpulse-http", daemon=True
        )
        self._thread.start()
        logger.info("serving %s on %s", self.what, self.url)
        return self

    def stop(self, grace_s: float = 0.0) -> None:
        """Stop accepting; let the requests in flight finish within `grace_s`; cut the rest."""
        self._server.shutdown()
        self._server.server_close()
        if grace_s > 0 and not self._server.wait_idle(grace_s):
            logger.warning("%s: cutting %d connections still open", self.what, self.connections)
        self._server.cut_all()
        if self._thread is not None:
            self._thread.join(timeout=5)


def credentials(settings: HttpEndpointSettings) -> tuple[str, str] | None:
    """The basic-auth pair an endpoint's settings ask for, or None (no auth)."""
    if settings.basic_auth_username is None or settings.basic_auth_password is None:
        return None
    return settings.basic_auth_username, settings.basic_auth_password.get_secret_value()


def start_endpoint(
    app: WSGIApp,
    settings: HttpEndpointSettings,
    what: str = "/metrics",
    env: str = "RAGPULSE_EXPORTER__",
) -> MetricsServer:
    """Start `app` on the address, TLS and limits of an endpoint's settings."""
    return MetricsServer(
        app,
        settings.host,
        settings.port,
        tls_cert_file=settings.tls_cert_file,
        tls_key_file=settings.tls_key_file,
        max_connections=settings.max_connections,
        request_timeout_s=settings.request_timeout_s,
        what=what,
        env=env,
    ).start()


def serve(
    registry: CollectorRegistry,
    settings: HttpEndpointSettings,
    readiness: Callable[[], Readiness] = always_ready,
    quality: Any = None,
) -> MetricsServer:
    """Start the endpoint described by `settings.exporter` (an `ExporterSettings`)."""
    return start_endpoint(build_app(registry, readiness, credentials(settings), quality), settings)
