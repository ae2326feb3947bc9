"""The shipped Alertmanager config against the real Debian prometheus-alertmanager.

The real exporter serves drift statistics of correlated retrieval metrics of one tenant
(pages), a ticket of the same tenant and tier, and a page of another tenant; a real
Prometheus evaluates the shipped quality rules and sends the alerts to Alertmanager
running the shipped `deploy/alertmanager/alertmanager.yml`, whose `pager` and `tickets`
receivers the test points at a local webhook (and whose waits it shortens; nothing of the
routing, grouping or inhibition is changed). The pager must get exactly one notification
per tenant x tier incident, holding every correlated alert with its runbook text, and the
ticket must be inhibited by the page.

Every alert rule ragpulse ships or generates (the rule files, their Kubernetes forms, what
`ragpulse slo rules` writes for the example SLOs) goes through the real router,
`amtool config routes test`, with its labels: each is `critical` or `warning`
(`collector/settings/severity.py`), and reaches the pager or the tickets accordingly. An
SLO's fast burn, posted to the real Alertmanager with its generated labels, pages in one
notification with the drop of its tier and tenant, and holds back the slow burn of the
same SLO and tenant.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

import pytest
import yaml

from collector.jobs.run.publish import QualityPoint
from collector.settings.openslo import load_openslo
from collector.settings.severity import CRITICAL, SEVERITIES, WARNING
from dashboards import slo_rules
from dashboards.boards import SLO_EXAMPLE
from exporters.prometheus import QualityCollector
from exporters.quality import ResultsCache
from ragpulse.cli import main
from tests.fixtures.prometheus import free_port

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "deploy" / "alertmanager" / "alertmanager.yml"
RULES = ROOT / "dashboards" / "prometheus" / "rules" / "quality.yml"
RULE_FILES = ROOT / "dashboards" / "prometheus" / "rules"
KUBERNETES_RULES = ROOT / "deploy" / "kubernetes" / "base" / "generated" / "prometheusrules.yaml"
BINARY = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
AMTOOL = shutil.which("amtool")
pytestmark = pytest.mark.skipif(
    BINARY is None or AMTOOL is None,
    reason="Alertmanager is not installed (Debian package prometheus-alertmanager)",
)
RECEIVER = {CRITICAL: "pager", WARNING: "tickets"}
EXAMPLE_LABELS = {"tenant": "acme"}
"""A label the series give an alert (the shipped rules' groups are per tenant)."""


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
    am, am_port = _alertmanager(tmp_path)
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


def _alert_rules(documents: list[Any]) -> list[dict[str, Any]]:
    """The alerting rules of rule files (`groups`) or PrometheusRule objects (`spec`)."""
    out = []
    for doc in documents:
        groups = (doc.get("spec") or doc).get("groups") or [] if isinstance(doc, dict) else []
        out += [r for g in groups for r in g.get("rules", []) if "alert" in r]
    return out


def _every_rule(tmp_path: Path) -> dict[str, list[dict[str, Any]]]:
    """Each shipped and generated rule file and its alerting rules."""
    files = {p.name: [yaml.safe_load(p.read_text())] for p in sorted(RULE_FILES.glob("*.yml"))}
    files[KUBERNETES_RULES.name] = list(yaml.safe_load_all(KUBERNETES_RULES.read_text()))
    out = tmp_path / "slo"
    assert main(["slo", "rules", "--openslo", str(SLO_EXAMPLE), "--output", str(out)]) == 0
    for path in sorted((out / "rules").glob("*.yml")):
        files[f"ragpulse slo rules: {path.name}"] = [yaml.safe_load(path.read_text())]
    return {name: _alert_rules(docs) for name, docs in files.items()}


def _route(labels: dict[str, str]) -> str:
    """The receiver(s) the shipped config sends an alert with these labels to."""
    assert AMTOOL is not None
    done = subprocess.run(
        [AMTOOL, "config", "routes", "test", f"--config.file={SHIPPED}",
         *(f"{k}={v}" for k, v in sorted(labels.items()))],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_every_shipped_and_generated_alert_routes_by_its_severity(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = _every_rule(tmp_path)
    capsys.readouterr()  # the paths `slo rules` printed
    # what the shipped files hold: quality, drift, threshold, canary, operations and the SLOs
    assert {"quality.yml", "operations.yml", "slo-faithfulness.yml"} <= set(files)
    assert len([f for f in files if f.startswith("ragpulse slo rules")]) == 6
    routed: dict[tuple[tuple[str, str], ...], str] = {}
    count = 0
    for name, rules in files.items():
        assert rules, name
        for rule in rules:
            count += 1
            labels = {**EXAMPLE_LABELS, **rule.get("labels", {}), "alertname": rule["alert"]}
            severity = labels.get("severity")
            assert severity in SEVERITIES, (name, rule["alert"], severity)
            key = tuple(sorted(labels.items()))
            if key not in routed:
                routed[key] = _route(labels)
            assert routed[key] == RECEIVER[severity], (name, rule["alert"], labels)
    assert count > 90 and len(routed) > 35, (count, len(routed))
    # the conversations SLO pages and tickets as the others, grouped on its own tier
    conversations = {
        (dict(k)["alertname"], v)
        for k, v in routed.items()
        if dict(k).get("slo") == "conversations-resolved" and dict(k).get("tier") == "conversation"
    }
    assert conversations == {("RagpulseSloFastBurn", "pager"), ("RagpulseSloSlowBurn", "tickets")}
    pages = {dict(k)["alertname"] for k, v in routed.items() if v == "pager"}
    assert {"RagpulseQualityDropPage", "RagpulseSloFastBurn", "RagpulseCanaryWorse"} <= pages
    # the router does tell them apart: the SLO's own word would have fallen to the tickets
    assert _route({"alertname": "RagpulseSloFastBurn", "severity": "page", "tenant": "acme"}) == (
        "tickets"
    )


def test_an_emerging_topic_opens_a_ticket() -> None:
    """`RagpulseTopicEmerging` (dashboards/prometheus/rules/topics.yml), with the labels its
    expression gives it, reaches the tickets receiver and not the pager."""
    document = yaml.safe_load((RULE_FILES / "topics.yml").read_text())
    (rule,) = [r for r in _alert_rules([document]) if r["alert"] == "RagpulseTopicEmerging"]
    labels = {**rule["labels"], "alertname": rule["alert"], "topic": "9",
              "label": "crypto, wallet / крипто, кошелек"}  # fmt: skip
    assert labels["severity"] == WARNING
    assert _route(labels) == RECEIVER[WARNING] == "tickets"


def test_the_inhibition_rules_pass_the_config_check() -> None:
    assert AMTOOL is not None
    done = subprocess.run(
        [AMTOOL, "check-config", str(SHIPPED)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 inhibit rules" in done.stdout


def _post_alerts(port: int, alerts: list[dict[str, Any]]) -> None:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v2/alerts",
        data=json.dumps(alerts).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


@pytest.mark.slow
def test_an_slo_fast_burn_pages_with_its_tier_and_holds_back_its_slow_burn(
    tmp_path: Path, http_server: Any
) -> None:
    specs = {s.name: s for s in load_openslo(SLO_EXAMPLE)}

    def alert(name: str, severity: str, slo: str, tenant: str) -> dict[str, Any]:
        labels = {**slo_rules.labels(specs[slo], severity), "tenant": tenant}
        return {"labels": {"alertname": name, **labels}, "annotations": {"summary": name}}

    drop = {"alertname": "RagpulseQualityDropPage", "severity": "critical", "tier": "retrieval",
            "metric": "hit_rate@1", "tenant": "acme"}  # fmt: skip
    alerts = [
        alert("RagpulseSloFastBurn", "page", "retrieval-hit", "acme"),
        {"labels": drop, "annotations": {"summary": "drop"}},  # the same incident
        alert("RagpulseSloSlowBurn", "ticket", "retrieval-hit", "acme"),  # held back
        alert("RagpulseSloSlowBurn", "ticket", "faithfulness", "globex"),  # another tenant
    ]
    sent = _notifications(tmp_path, http_server, alerts, expected=2)
    # the burn and the drop of hit_rate@1 are one retrieval incident of acme: ONE page
    assert sorted(sent) == [
        ("/pager", ["RagpulseQualityDropPage", "RagpulseSloFastBurn"],
         {"severity": "critical", "tenant": "acme", "tier": "retrieval"}),
        ("/tickets", ["RagpulseSloSlowBurn"],
         {"severity": "warning", "tenant": "globex", "tier": "generation"}),
    ]  # fmt: skip


def _notifications(
    tmp_path: Path, http_server: Any, alerts: list[dict[str, Any]], expected: int
) -> list[tuple[str, list[str], dict[str, str]]]:
    """Post `alerts` to a real Alertmanager with the shipped config (its receivers pointed
    at a recorder); what it sent (receiver path, alert names, group labels) once `expected`
    notifications came and a few seconds more passed for any other."""
    _Recorder.received = []
    port = http_server(lambda: b"")
    _config(tmp_path / "alertmanager.yml", f"http://127.0.0.1:{port}")
    am, am_port = _alertmanager(tmp_path)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                _post_alerts(am_port, alerts)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(_Recorder.received) < expected:
            time.sleep(0.3)
        time.sleep(6)  # anything else (the held-back slow burn) would come by now
    finally:
        am.terminate()
        am.wait(timeout=10)
    return [
        (path, sorted(a["labels"]["alertname"] for a in body["alerts"]), body["groupLabels"])
        for path, body in _Recorder.received
    ]


def test_no_traces_holds_back_the_slo_burns_of_stale_numbers(
    tmp_path: Path, http_server: Any
) -> None:
    spec = next(s for s in load_openslo(SLO_EXAMPLE) if s.name == "retrieval-hit")
    burn = {**slo_rules.labels(spec, "page"), "alertname": "RagpulseSloFastBurn", "tenant": "acme"}
    stopped = {"alertname": "RagpulseNoTraces", "severity": "warning"}
    alerts = [{"labels": labels, "annotations": {"summary": "x"}} for labels in (burn, stopped)]
    assert _notifications(tmp_path, http_server, alerts, expected=1) == [
        ("/tickets", ["RagpulseNoTraces"], {"severity": "warning"})
    ]


def _alertmanager(tmp_path: Path) -> tuple[subprocess.Popen[bytes], int]:
    """The real Alertmanager on a free port with the config written in `tmp_path`."""
    am_port = free_port()
    assert BINARY is not None
    log = (tmp_path / "alertmanager.log").open("wb")
    am = subprocess.Popen(
        [BINARY, f"--config.file={tmp_path / 'alertmanager.yml'}",
         f"--storage.path={tmp_path / 'am-data'}", f"--web.listen-address=127.0.0.1:{am_port}",
         "--cluster.listen-address="],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    return am, am_port
