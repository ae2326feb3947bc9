"""The HTTP endpoint of `ragpulse run`: `/metrics`, `/healthz`, `/readyz`.

A small WSGI app (`app`: the routes and the probes; `auth`: basic auth; `exposition`: the
`/metrics` body in the text format or OpenMetrics) on a `wsgiref` server hardened against
clients that connect and stall (`bounded`), run on a background thread, over TLS when
configured (`server`). The OTLP receiver (`receiver`) is served the same way. Import
everything from here.
"""

from __future__ import annotations

from exporters.http.app import (
    Readiness,
    StartResponse,
    WSGIApp,
    always_ready,
    build_app,
)
from exporters.http.auth import OPEN_PATHS
from exporters.http.exposition import scrape, wants_openmetrics
from exporters.http.server import MetricsServer, serve

__all__ = [
    "OPEN_PATHS",
    "MetricsServer",
    "Readiness",
    "StartResponse",
    "WSGIApp",
    "always_ready",
    "build_app",
    "scrape",
    "serve",
    "wants_openmetrics",
]
