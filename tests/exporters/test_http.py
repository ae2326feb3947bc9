"""The HTTP endpoint over real sockets: metrics, health, readiness, basic auth, TLS, and
its hardening against idle and slow clients (connection cap, deadlines)."""

from __future__ import annotations

import base64
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter

from collector.settings import ExporterSettings
from exporters.http import MetricsServer, Readiness, build_app, serve


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


@pytest.fixture()
def tls_cert(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 made by the openssl command line."""
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
    return cert, key


def _client_context(cert: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(cert))
    context.check_hostname = False
    return context


def test_tls(tls_cert: tuple[Path, Path]) -> None:
    cert, key = tls_cert
    server = MetricsServer(
        build_app(_registry()), port=0, tls_cert_file=cert, tls_key_file=key
    ).start()
    try:
        assert server.url.startswith("https://")
        status, body = _get(server.url + "/metrics", context=_client_context(cert))
        assert status == 200 and "ragpulse_test_things_total" in body
    finally:
        server.stop()


def _wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_idle_tls_connection_does_not_block_other_clients(tls_cert: tuple[Path, Path]) -> None:
    """A client that connects and never starts the TLS handshake must not stall the
    server: the handshake runs on that connection's thread, and is cut at the deadline."""
    cert, key = tls_cert
    server = MetricsServer(
        build_app(_registry()),
        port=0,
        tls_cert_file=cert,
        tls_key_file=key,
        request_timeout_s=2.0,
    ).start()
    idle = socket.create_connection((server.host, server.port))
    try:
        assert _wait_for(lambda: server.connections == 1)
        context = _client_context(cert)
        with ThreadPoolExecutor(8) as pool:
            statuses = list(
                pool.map(lambda _: _get(server.url + "/healthz", context=context)[0], range(16))
            )
        assert statuses == [200] * 16
        # The silent client is cut at its deadline, not kept forever.
        idle.settimeout(10)
        started = time.monotonic()
        assert idle.recv(1) == b""
        assert time.monotonic() - started < 5
        assert server.timed_out == 1
    finally:
        idle.close()
        server.stop()


@pytest.mark.slow
def test_connection_cap_bounds_threads_and_keeps_answering() -> None:
    """300 idle connections against a cap of 8: at most 8 connection threads exist (each
    newer connection cuts the oldest), a probe is still answered at once, and the idle
    ones left are cut at their deadline. Wired through `serve()` and the settings."""
    before = threading.active_count()
    settings = ExporterSettings(port=0, max_connections=8, request_timeout_s=4.0)
    server = serve(_registry(), settings)
    sockets: list[socket.socket] = []
    try:
        for _ in range(300):
            sockets.append(socket.create_connection((server.host, server.port), timeout=5))
        assert _wait_for(lambda: server.evicted == 292)
        assert server.connections == 8 and server.refused == 0
        assert threading.active_count() <= before + 8 + 1  # + the serving thread
        # The oldest connections were closed by the server.
        sockets[0].settimeout(5)
        assert sockets[0].recv(1) == b""
        started = time.monotonic()
        assert _get(server.url + "/healthz")[0] == 200
        assert time.monotonic() - started < 1.0
        assert threading.active_count() <= before + 8 + 1
        assert _wait_for(lambda: server.connections == 0, timeout=8)
        assert server.timed_out == 7 and server.evicted == 293
        assert threading.active_count() <= before + 1
        assert _get(server.url + "/healthz")[0] == 200
    finally:
        for sock in sockets:
            sock.close()
        server.stop()


def test_a_connection_is_refused_when_no_slot_frees() -> None:
    """With the only slot held by a request the server cannot cut (its readiness check
    hangs), a new connection gets 503 within the eviction wait instead of a thread."""
    release = threading.Event()

    def hanging() -> Readiness:
        release.wait(10)
        return Readiness(True, {})

    before = threading.active_count()
    server = MetricsServer(
        build_app(_registry(), hanging), port=0, max_connections=1, request_timeout_s=5.0
    ).start()
    try:
        with ThreadPoolExecutor(1) as pool:
            stuck = pool.submit(_get, server.url + "/readyz")
            assert _wait_for(lambda: server.connections == 1)
            started = time.monotonic()
            with socket.create_connection((server.host, server.port), timeout=5) as extra:
                answer = extra.makefile("rb").read()
            assert answer.startswith(b"HTTP/1.0 503 ")
            assert answer.endswith(b"too many connections\n")
            assert time.monotonic() - started < 2.0
            assert server.refused == 1
            assert threading.active_count() <= before + 1 + 1 + 1  # + pool thread
            release.set()
            with pytest.raises(OSError):  # it was cut to make room: no response
                stuck.result(timeout=10)
    finally:
        release.set()
        server.stop()


def test_slow_client_is_cut_at_the_request_deadline() -> None:
    """An idle connection, and one trickling a byte at a time (each read within the
    socket timeout), are both closed once `request_timeout_s` has passed since accept."""
    server = MetricsServer(build_app(_registry()), port=0, request_timeout_s=1.0).start()
    try:
        idle = socket.create_connection((server.host, server.port), timeout=10)
        started = time.monotonic()
        assert idle.recv(1) == b""
        assert time.monotonic() - started < 3
        idle.close()

        slow = socket.create_connection((server.host, server.port), timeout=10)
        started = time.monotonic()
        request = b"GET /healthz HTTP/1.0\r\nX-Pad: " + b"a" * 1000
        cut = False
        for byte in request:
            try:
                slow.sendall(bytes([byte]))
            except OSError:
                cut = True
                break
            time.sleep(0.05)
            if time.monotonic() - started > 6:
                break
        if not cut:
            slow.settimeout(3)
            try:
                cut = slow.recv(1) == b""
            except OSError:
                cut = True
        assert cut and time.monotonic() - started < 5
        slow.close()
        assert _wait_for(lambda: server.timed_out == 2)
        assert _get(server.url + "/healthz")[0] == 200
    finally:
        server.stop()


@pytest.mark.parametrize("scheme", ["Basic", "basic", "BASIC", "bAsIc"])
def test_basic_auth_scheme_is_case_insensitive(scheme: str) -> None:
    server = MetricsServer(build_app(_registry(), basic_auth=("prom", "s3cret")), port=0).start()
    try:
        good = base64.b64encode(b"prom:s3cret").decode()
        assert _get(server.url + "/metrics", {"Authorization": f"{scheme} {good}"})[0] == 200
        assert _get(server.url + "/metrics", {"Authorization": f"{scheme}  {good} "})[0] == 200
    finally:
        server.stop()


def test_basic_auth_rejects_other_schemes_and_garbage_but_not_probes() -> None:
    server = MetricsServer(
        build_app(_registry(), lambda: Readiness(True, {"database": "ok"}), ("prom", "s3cret")),
        port=0,
    ).start()
    try:
        good = base64.b64encode(b"prom:s3cret").decode()
        for header in (f"Bearer {good}", "Basic !!!not-base64", f"Basic{good}", good, "Basic"):
            status, _ = _get(server.url + "/metrics", {"Authorization": header})
            assert status == 401, header
        assert _get(server.url + "/nope")[0] == 401
        # The probes stay open: Kubernetes' httpGet probes carry no credentials.
        assert _get(server.url + "/healthz")[0] == 200
        assert _get(server.url + "/readyz")[0] == 200
    finally:
        server.stop()
