"""The HTTP endpoint over real sockets: metrics, health, readiness, basic auth, TLS."""

from __future__ import annotations

import base64
import ssl
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter

from exporters.http import MetricsServer, Readiness, build_app


def _get(
    url: str, headers: dict[str, str] | None = None, context: ssl.SSLContext | None = None
) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5, context=context) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    Counter("ragpulse_test_things", "things", registry=registry).inc()
    return registry


def test_metrics_health_and_readiness() -> None:
    state = {"ready": False}
    server = MetricsServer(
        build_app(_registry(), lambda: Readiness(state["ready"], {"database": "down"})),
        port=0,
    ).start()
    try:
        status, body = _get(server.url + "/metrics")
        assert status == 200 and "ragpulse_test_things_total 1.0" in body
        assert _get(server.url + "/healthz")[0] == 200
        status, body = _get(server.url + "/readyz")
        assert status == 503 and "database" in body
        state["ready"] = True
        assert _get(server.url + "/readyz")[0] == 200
        assert _get(server.url + "/nope")[0] == 404
    finally:
        server.stop()


def test_basic_auth_protects_metrics() -> None:
    server = MetricsServer(build_app(_registry(), basic_auth=("prom", "s3cret")), port=0).start()
    try:
        assert _get(server.url + "/metrics")[0] == 401
        bad = base64.b64encode(b"prom:wrong").decode()
        assert _get(server.url + "/metrics", {"Authorization": f"Basic {bad}"})[0] == 401
        good = base64.b64encode(b"prom:s3cret").decode()
        assert _get(server.url + "/metrics", {"Authorization": f"Basic {good}"})[0] == 200
        assert _get(server.url + "/healthz")[0] == 200
    finally:
        server.stop()


def test_tls(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    try:
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "1",
                "-subj",
                "/CN=127.0.0.1",
                "-keyout",
                str(key),
                "-out",
                str(cert),
            ],
            check=True,
            capture_output=True,
        )
    except FileNotFoundError:
        pytest.skip("openssl is not installed; cannot make a test certificate")
    server = MetricsServer(
        build_app(_registry()), port=0, tls_cert_file=cert, tls_key_file=key
    ).start()
    try:
        assert server.url.startswith("https://")
        context = ssl.create_default_context(cafile=str(cert))
        context.check_hostname = False
        status, body = _get(server.url + "/metrics", context=context)
        assert status == 200 and "ragpulse_test_things_total" in body
    finally:
        server.stop()
