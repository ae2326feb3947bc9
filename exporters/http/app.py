"""The WSGI app of the endpoint: `/metrics`, `/healthz` and `/readyz`.

`/healthz` answers 200 while the process serves; `/readyz` asks a callback and answers
503 with the reasons when the service is not ready. Optional HTTP basic auth (constant-
time compare) guards `/metrics` (and every other path) but not the two probes, which
Kubernetes calls without credentials.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, make_wsgi_app
from prometheus_client.openmetrics.exposition import CONTENT_TYPE_LATEST as OPENMETRICS_TYPE

from exporters.http.auth import UNAUTHORIZED_HEADERS, expected_credentials, refused
from exporters.http.exposition import scrape, wants_openmetrics

logger = logging.getLogger(__name__)

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


@dataclass(frozen=True)
class Readiness:
    ready: bool
    checks: dict[str, str] = field(default_factory=dict)


def always_ready() -> Readiness:
    return Readiness(True, {})


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
    expected = expected_credentials(basic_auth)

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "/")
        if refused(path, environ.get("HTTP_AUTHORIZATION", ""), expected):
            start_response("401 Unauthorized", UNAUTHORIZED_HEADERS)
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
