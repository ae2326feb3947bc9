"""The demo's SLOs: the example OpenSLO file drives the events it records, the rules its
Prometheus loads and the dashboard (issue 32: "an OpenSLO file in examples/ drives the
generated rules and the dashboard in the demo")."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import select

from collector.ingest.pipeline import Ingestor, RawMessage
from collector.settings import load_settings
from collector.settings.openslo import load_openslo
from collector.store.models import Trace
from collector.store.session import make_engine, make_session_factory
from dashboards import slo_rules
from dashboards.boards import SLO_EXAMPLE
from ragpulse.commands.demo import EXAMPLE_SLOS, demo_settings, handoff_settings, slo_line
from ragpulse.demo import handoff
from ragpulse.demo.prometheus import rule_files, shipped_rules
from ragpulse.demo.traffic import generate_round
from ragpulse.monitoring import Monitoring

SHIPPED = Path(__file__).resolve().parents[2] / "dashboards"


def test_the_demo_uses_the_example_openslo_file_behind_the_shipped_rules_and_board() -> None:
    assert EXAMPLE_SLOS == SLO_EXAMPLE
    specs = demo_settings(load_settings(), "sqlite:///d.db", "127.0.0.1:1").slo.specs()
    assert specs == load_openslo(EXAMPLE_SLOS)
    board = (SHIPPED / "grafana" / "dashboards" / "slo.json").read_text()
    for spec in specs:  # the SLO dashboard `ragpulse report` draws has a section for each
        assert f'"SLO {spec.name}"' in board


def test_the_demo_hands_its_slos_to_the_other_commands(tmp_path: Path) -> None:
    """Issue 39: `ragpulse slo check` in a second terminal said "no SLO declared" while the
    demo's Prometheus fired the example SLOs' alerts: the settings file the demo writes
    carries its SLOs, and the start-up text names them."""
    settings = demo_settings(load_settings(), "sqlite:///d.db", "127.0.0.1:1")
    given = handoff.write(tmp_path, handoff_settings(settings), None)
    assert load_settings(given).slo.specs() == load_openslo(EXAMPLE_SLOS)
    line = slo_line(settings, prometheus=True)
    assert line is not None and str(EXAMPLE_SLOS) in line and "ragpulse slo check" in line
    for spec in settings.slo.specs():
        assert spec.name in line
    # the user's own objectives travel too
    own = demo_settings(
        load_settings(
            slo={"objectives": [{"name": "fast", "kind": "latency", "limit": "3s", "target": 0.99}]}
        ),
        "sqlite:///d.db",
        "127.0.0.1:1",
    )
    given = handoff.write(tmp_path, handoff_settings(own), None)
    assert [s.name for s in load_settings(given).slo.specs()] == ["fast"]
    assert slo_line(own, prometheus=False) is not None
    assert slo_line(load_settings(), prometheus=True) is None


def test_the_demo_prometheus_loads_rules_generated_from_the_demo_slos(tmp_path: Path) -> None:
    example = load_openslo(EXAMPLE_SLOS)
    files = rule_files(tmp_path, example)
    slo = sorted(p for p in files if p.name.startswith("slo-"))
    assert [p.name for p in slo] == sorted(slo_rules.file_name(s) for s in example)
    for path in slo:  # from the example file: the shipped ones, byte for byte
        assert path.parent == tmp_path / "rules"
        assert path.read_text() == (SHIPPED / "prometheus" / "rules" / path.name).read_text()
    assert set(files) - set(slo) == {p for p in shipped_rules() if not p.name.startswith("slo-")}
    # the user's own SLOs replace the example's (no stale file of a previous start stays)
    own = load_settings(
        slo={"objectives": [{"name": "fast", "kind": "latency", "limit": "3s", "target": 0.99}]}
    )
    settings = demo_settings(own, "sqlite:///d.db", "127.0.0.1:1")
    files = rule_files(tmp_path, settings.slo.specs())
    assert sorted(p.name for p in files if p.name.startswith("slo-")) == ["slo-fast.yml"]
    assert sorted(p.name for p in (tmp_path / "rules").iterdir()) == ["slo-fast.yml"]
    fast = (tmp_path / "rules" / "slo-fast.yml").read_text()
    assert 'ragpulse_slo_events_total{slo="fast"' in fast
    checked = subprocess.run(
        ["promtool", "check", "rules", str(tmp_path / "rules" / "slo-fast.yml")],
        capture_output=True,
        text=True,
        check=False,
    )
    if checked.returncode == 127:  # pragma: no cover - promtool missing
        pytest.skip("promtool is not installed")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def _metrics(port: int) -> dict[tuple[str, str, str], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "ragpulse_slo_events_total":
                labels = sample.labels
                out[(labels["slo"], labels["tenant"], labels["outcome"])] = sample.value
    return out


@pytest.mark.slow
def test_the_demo_traffic_counts_slo_events_on_metrics(sqlite_url: str, embedder: Any) -> None:
    """A round of the demo's traffic, stored by the ingest, evaluated by the demo service's
    own jobs (judge off, as `make demo`): the example SLOs' counters on /metrics match the
    stored traces."""
    base = load_settings(exporter={"port": 0}, scheduler={"initial_delay_s": 3600})
    settings = demo_settings(base, sqlite_url, "127.0.0.1:1")
    engine = make_engine(sqlite_url)
    messages = [
        RawMessage(m.topic or "rag.traces", 0, i, m.key, m.value)
        for i, m in enumerate(generate_round(0, now=datetime.now(UTC), run="ab12"))
    ]
    factory = make_session_factory(engine)
    with factory() as session:
        Ingestor(settings).ingest_batch(session, messages)
        session.commit()
    monitoring = Monitoring(settings, engine, CollectorRegistry(), embedder=embedder).start()
    try:
        assert monitoring.runner is not None and monitoring.server is not None
        reports = monitoring.runner.run_many()
        assert all(r.status in ("ok", "skipped") for r in reports), reports
        counted = _metrics(monitoring.server.port)
    finally:
        monitoring.stop()
        engine.dispose()
    with factory() as session:
        traces = session.execute(
            select(Trace.tags, Trace.latency_ms, Trace.judge_decision, Trace.judge_label).where(
                Trace.not_request.is_(None)
            )
        ).all()
    latency: Counter[tuple[str, str, str]] = Counter()
    agrees: Counter[tuple[str, str, str]] = Counter()
    for tags, ms, decision, label in traces:
        tenant = str((tags or {}).get("tenant") or "")
        if ms is not None:
            latency[("fast-answers", tenant, "good" if ms <= 2200 else "bad")] += 1
        if decision is not None and label is not None:
            agrees[("judge-decisions", tenant, "good" if decision == label else "bad")] += 1
    assert sum(latency.values()) >= 50 and sum(agrees.values()) >= 10
    for key, count in (latency + agrees).items():
        assert counted[key] == count, key
    # the retrieval SLO counts too; the judge SLOs have no event with the judge off
    assert sum(v for k, v in counted.items() if k[0] == "retrieval-hit") > 0
    assert not any(v for k, v in counted.items() if k[0] in ("faithfulness", "judge-calls"))


def test_the_installed_commands_can_generate_slo_rules_outside_the_checkout(tmp_path: Path) -> None:
    """`ragpulse demo` (and `ragpulse slo rules`) import `dashboards` at run time: it must be
    importable as installed, from any working directory, not only from the checkout."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", "import dashboards.slo_rules, dashboards.runbooks"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
