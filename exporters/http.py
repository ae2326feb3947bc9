"""The HTTP endpoint of `ragpulse run`: `/metrics`, `/healthz`, `/readyz`.

A small WSGI app on a `wsgiref` server: prometheus-client's exposition for `/metrics`,
optional HTTP basic auth (constant-time compare) and optional TLS. `/healthz` answers 200
while the process serves; `/readyz` asks a callback and answers 503 with the reasons when
the service is not ready. Basic auth guards `/metrics` (and every other path) but not the
two probes, which Kubernetes calls without credentials.

The server is hardened against clients that connect and stall: one thread per connection
but at most `max_connections` of them; a connection beyond that cuts the oldest one being
served (real requests take milliseconds, so the oldest is the likeliest to be idle) and is
refused only when no slot frees within half a second; the TLS handshake runs on the
connection's own thread (never in `accept()`, where one silent client would freeze every
endpoint), and every connection has a deadline of `request_timeout_s` from accept to
response, handshake included, after which it is cut.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hmac
import json
import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest, make_wsgi_app
from prometheus_client.openmetrics.exposition import CONTENT_TYPE_LATEST as OPENMETRICS_TYPE
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest

from collector.errors import UserError

logger = logging.getLogger(__name__)

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


@dataclass(frozen=True)
class Readiness:
    ready: bool
    checks: dict[str, str] = field(default_factory=dict)


def always_ready() -> Readiness:
    return Readiness(True, {})


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("http %s", format % args)


_EOF = b"# EOF\n"


def scrape(registry: CollectorRegistry, quality: Any = None, openmetrics: bool = False) -> bytes:
    """The `/metrics` body: the registry's series, then the pre-rendered quality families
    (`QualityCollector.render()`, kept out of the registry so they are formatted once).
    With `openmetrics`, both in OpenMetrics 1.0 (the only format with exemplars), one `# EOF`."""
    if not openmetrics:
        body = generate_latest(registry)
        return body + quality.render() if quality is not None else body
    series: bytes = openmetrics_latest(registry)  # type: ignore[no-untyped-call]
    if quality is None:
        return series
    rendered: bytes = quality.render(openmetrics=True)
    return series.removesuffix(_EOF) + rendered


def wants_openmetrics(accept: str) -> bool:
    """Whether an `Accept` header asks for OpenMetrics (Prometheus 2.x does, preferring it
    to the text format; it keeps the exemplars with its exemplar storage on); any other
    scraper gets the text format."""
    return any(
        part.split(";")[0].strip().lower() == "application/openmetrics-text"
        for part in accept.split(",")
    )


OPEN_PATHS = frozenset({"/healthz", "/readyz"})
"""Paths served without credentials even when basic auth is configured: the liveness and
readiness probes (Kubernetes sends no credentials; they reveal no series or secrets)."""


def _credentials_match(header: str, expected: bytes) -> bool:
    """An `Authorization` header against `user:password` (UTF-8). The scheme is matched
    case-insensitively (RFC 7617: `basic`, `BASIC`), the credentials in constant time."""
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        given = base64.b64decode(token.strip(), validate=True)
    except (binascii.Error, ValueError):
        return False
    return hmac.compare_digest(given, expected)


def build_app(
    registry: CollectorRegistry,
    readiness: Callable[[], Readiness] = always_ready,
    basic_auth: tuple[str, str] | None = None,
    quality: Any = None,
) -> WSGIApp:
    """`quality` (a `QualityCollector` not registered on `registry`) is served pre-rendered,
    in OpenMetrics when the scraper asks for it (`Accept: application/openmetrics-text`,
    exemplars included), else in the text format 0.0.4.
    `basic_auth` (user, password) guards every path except `OPEN_PATHS`."""
    metrics_app = make_wsgi_app(registry)
    expected = None
    if basic_auth is not None:
        expected = f"{basic_auth[0]}:{basic_auth[1]}".encode()

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "/")
        if (
            expected is not None
            and path not in OPEN_PATHS
            and not _credentials_match(environ.get("HTTP_AUTHORIZATION", ""), expected)
        ):
            start_response(
                "401 Unauthorized",
                [
                    ("WWW-Authenticate", 'Basic realm="ragpulse", charset="UTF-8"'),
                    ("Content-Type", "text/plain"),
                ],
            )
            return [b"unauthorized\n"]
        if path == "/metrics":
            if quality is not None:
                openmetrics = wants_openmetrics(environ.get("HTTP_ACCEPT", ""))
                kind = OPENMETRICS_TYPE if openmetrics else CONTENT_TYPE_LATEST
                start_response("200 OK", [("Content-Type", kind)])
                return [scrape(registry, quality, openmetrics)]
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


_EVICTION_WAIT_S = 0.5
"""How long the serving thread waits for an evicted connection's slot before refusing."""

_REFUSED = (
    b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
    b"Connection: close\r\nRetry-After: 1\r\n\r\ntoo many connections\n"
)


@dataclass
class _Connection:
    """A connection being served: its socket (the TLS one once wrapped) and deadline."""

    sock: socket.socket
    deadline: float
    cut: str | None = None
    """Why the server cut it: "deadline" or "evicted" (for a newer connection)."""


class _BoundedWSGIServer(WSGIServer):
    """A `WSGIServer` that serves each connection on its own daemon thread, at most
    `max_connections` at once, each within `request_timeout_s` (see the module docstring).

    The serving thread only accepts, counts and hands over; it also cuts connections past
    their deadline (`service_actions`, run every poll interval), so a client that trickles
    one byte at a time cannot outlive the deadline either."""

    request_queue_size = 128  # the listen backlog: a burst waits for accept(), not SYN retries

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[WSGIRequestHandler],
        *,
        max_connections: int,
        request_timeout_s: float,
        tls: ssl.SSLContext | None,
    ) -> None:
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        if request_timeout_s <= 0:
            raise ValueError("request_timeout_s must be positive")
        super().__init__(address, handler)
        self.max_connections = max_connections
        self.request_timeout_s = request_timeout_s
        self.tls = tls
        self.refused = 0
        self.timed_out = 0
        self.evicted = 0
        self._slots = threading.BoundedSemaphore(max_connections)
        self._lock = threading.Lock()
        self._live: dict[int, _Connection] = {}
        self._next_id = 0

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self._evict_oldest()
            if not self._slots.acquire(timeout=_EVICTION_WAIT_S):
                self.refused += 1
                self._refuse(request)
                return
        with self._lock:
            key = self._next_id
            self._next_id += 1
            self._live[key] = _Connection(request, time.monotonic() + self.request_timeout_s)
        try:
            threading.Thread(
                target=self._serve_connection,
                args=(key, request, client_address),
                name="ragpulse-http-conn",
                daemon=True,
            ).start()
        except RuntimeError:  # cannot start a thread (interpreter exiting, limits)
            self._forget(key)
            self.shutdown_request(request)
            self._slots.release()

    def _refuse(self, request: socket.socket) -> None:
        """Answer 503 without blocking (plain HTTP; a TLS client just sees the close)."""
        if self.tls is None:
            with contextlib.suppress(OSError):
                request.setblocking(False)
                request.send(_REFUSED)
        self.shutdown_request(request)

    def _serve_connection(self, key: int, request: socket.socket, client_address: Any) -> None:
        conn: socket.socket = request
        timed_out = False
        try:
            conn.settimeout(self.request_timeout_s)
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
                with self._lock:
                    self._live[key].sock = conn
                conn.do_handshake()
            self.finish_request(conn, client_address)
        except TimeoutError:
            timed_out = True
        except (OSError, ValueError) as exc:
            # Resets, failed handshakes, cut connections: the client's problem.
            logger.debug("http connection from %s ended: %r", client_address, exc)
        except Exception:
            logger.exception("http connection from %s failed", client_address)
        finally:
            state = self._forget(key)
            with self._lock:
                if state is not None and state.cut == "evicted":
                    self.evicted += 1
                elif timed_out or (state is not None and state.cut):
                    self.timed_out += 1
            self.shutdown_request(conn)
            self._slots.release()

    def _forget(self, key: int) -> _Connection | None:
        with self._lock:
            return self._live.pop(key, None)

    def service_actions(self) -> None:
        now = time.monotonic()
        with self._lock:
            for state in self._live.values():
                if not state.cut and state.deadline <= now:
                    self._cut(state.sock)
                    state.cut = "deadline"

    def _evict_oldest(self) -> None:
        with self._lock:
            candidates = [state for state in self._live.values() if not state.cut]
            if candidates:
                oldest = min(candidates, key=lambda state: state.deadline)
                self._cut(oldest.sock)
                oldest.cut = "evicted"

    def cut_all(self) -> None:
        with self._lock:
            for state in self._live.values():
                self._cut(state.sock)

    @staticmethod
    def _cut(conn: socket.socket) -> None:
        # The plain socket's shutdown, also on an SSLSocket (whose own shutdown would
        # unset its TLS state under the thread that is using it): the blocked read or
        # write returns and that thread ends. Held under the lock, so the descriptor
        # cannot have been closed and reused meanwhile.
        with contextlib.suppress(OSError):
            socket.socket.shutdown(conn, socket.SHUT_RDWR)

    @property
    def connections(self) -> int:
        with self._lock:
            return len(self._live)


def _tls_context(cert_file: Path, key_file: Path | None) -> ssl.SSLContext:
    for path in (cert_file, key_file):
        if path is not None and not path.is_file():
            raise UserError(f"TLS file {path} does not exist (RAGPULSE_EXPORTER__TLS_*_FILE)")
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
    each within `request_timeout_s` from accept to response, the TLS handshake included."""

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
    ) -> None:
        context = None
        if tls_cert_file is not None:
            context = _tls_context(tls_cert_file, tls_key_file)
        try:
            self._server = _BoundedWSGIServer(
                (host, port),
                _QuietHandler,
                max_connections=max_connections,
                request_timeout_s=request_timeout_s,
                tls=context,
            )
        except OSError as exc:
            raise UserError(
                f"cannot serve /metrics on {host}:{port}: {exc.strerror or exc} "
                "(choose another RAGPULSE_EXPORTER__HOST/PORT)"
            ) from None
        self._server.set_app(app)
        self.tls = context is not None
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
        logger.info("serving /metrics on %s", self.url)
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._server.cut_all()
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
        max_connections=settings.max_connections,
        request_timeout_s=settings.request_timeout_s,
    ).start()
