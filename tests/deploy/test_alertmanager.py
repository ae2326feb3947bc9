"""The shipped Alertmanager config against the real Debian prometheus-alertmanager.

The real exporter serves drift statistics of correlated retrieval metrics of one tenant
(pages), a ticket of the same tenant and tier, and a page of another tenant; a real
Prometheus evaluates the shipped quality rules and sends the alerts to Alertmanager
running the shipped `deploy/alertmanager/alertmanager.yml`, whose `pager` and `tickets`
receivers the test points at a local webhook (and whose waits it shortens; nothing of the
routing, grouping or inhibition is changed). The pager must get exactly one notification
per tenant x tier incident, holding every correlated alert with its runbook text, and the
ticket must be inhibited by the page.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

import pytest
import yaml

from collector.jobs.publish import QualityPoint
from exporters.prometheus import QualityCollector
from exporters.quality import ResultsCache
from tests.fixtures.prometheus import free_port

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "deploy" / "alertmanager" / "alertmanager.yml"
RULES = ROOT / "dashboards" / "prometheus" / "rules" / "quality.yml"
BINARY = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
pytestmark = pytest.mark.skipif(
    BINARY is None, reason="Alertmanager is not installed (Debian package prometheus-alertmanager)"
)


class _Recorder(BaseHTTPRequestHandler):
    received: ClassVar[list[tuple[str, dict[str, Any]]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append((self.path, json.loads(body)))
        self.send_response(200)
        self.end_headers()

    def do_GET(self) -> None:
        body = self.server.metrics()  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def http_server() -> Iterator[Callable[[Callable[[], bytes]], int]]:
    servers: list[ThreadingHTTPServer] = []

    def start(metrics: Callable[[], bytes]) -> int:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
        server.metrics = metrics  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return int(server.server_address[1])

    yield start
    for server in servers:
        server.shutdown()


def _point(metric: str, detector: str, tenant: str, value: float) -> QualityPoint:
    return QualityPoint(
        metric,
        f"drift:{detector}",
        f"tenant={tenant}",
        value,
        200,
        job="real_users_benchmark",
        group_labels=MappingProxyType({"tenant": tenant}),
    )


def _config(path: Path, webhook: str) -> None:
    """The shipped config with the receivers pointed at the webhook and shorter waits."""
    config = yaml.safe_load(SHIPPED.read_text())
    for receiver in config["receivers"]:
        receiver["webhook_configs"] = [
            {"url": f"{webhook}/{receiver['name']}", "send_resolved": False}
        ]
    for route in [config["route"], *config["route"]["routes"]]:
        route.update(group_wait="3s", group_interval="1m", repeat_interval="1h")
    path.write_text(yaml.safe_dump(config))


@pytest.mark.slow
def test_one_page_per_incident_with_its_runbook_and_tickets_inhibited(
    tmp_path: Path, prometheus_server: Any, http_server: Any
) -> None:
    _Recorder.received = []
    cache = ResultsCache()
    cache.update(
        [
            _point("hit_rate@1", "page", "acme", 1.6),
            _point("mrr", "page", "acme", 1.4),
            _point("ndcg@10", "page", "acme", 1.2),
            _point("hit_rate@10", "ticket", "acme", 1.3),  # same tenant and tier: inhibited
            _point("faithfulness", "page", "globex", 2.0),  # another incident
            _point("mrr", "page", "globex", 0.4),  # steady
        ]
    )
    collector = QualityCollector(cache, ["tenant"])
    port = http_server(collector.render)
    _config(tmp_path / "alertmanager.yml", f"http://127.0.0.1:{port}")
    am_port = free_port()
    assert BINARY is not None
    log = (tmp_path / "alertmanager.log").open("wb")
    am = subprocess.Popen(
        [BINARY, f"--config.file={tmp_path / 'alertmanager.yml'}",
         f"--storage.path={tmp_path / 'am-data'}", f"--web.listen-address=127.0.0.1:{am_port}",
         "--cluster.listen-address="],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        prometheus_server([f"127.0.0.1:{port}"], [RULES], alertmanagers=[f"127.0.0.1:{am_port}"])
        deadline = time.monotonic() + 45
        while time.monotonic() < deadline and len(_Recorder.received) < 2:
            time.sleep(0.5)
        time.sleep(8)  # anything else (a ticket, a second page) would come by now
    finally:
        am.terminate()
        am.wait(timeout=10)
    pages = [body for path, body in _Recorder.received if path == "/pager"]
    tickets = [body for path, body in _Recorder.received if path == "/tickets"]
    assert tickets == []
    groups = {(b["groupLabels"].get("tenant"), b["groupLabels"].get("tier")): b for b in pages}
    assert sorted(groups) == [("acme", "retrieval"), ("globex", "generation")]
    assert len(pages) == 2
    acme = groups[("acme", "retrieval")]
    metrics = sorted(a["labels"]["metric"] for a in acme["alerts"])
    assert metrics == ["hit_rate@1", "mrr", "ndcg@10"]
    for alert in acme["alerts"]:
        assert alert["labels"]["alertname"] == "RagpulseQualityDropPage"
        assert alert["labels"]["severity"] == "critical"
        assert "A drop a person should look at now" in alert["annotations"]["description"]
        assert alert["labels"]["metric"] in alert["annotations"]["summary"]
    (globex,) = groups[("globex", "generation")]["alerts"]
    assert globex["labels"]["metric"] == "faithfulness"
