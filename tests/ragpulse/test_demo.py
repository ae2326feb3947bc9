"""The bundled sample traffic and `ragpulse demo` end to end (real broker, SQLite, Ctrl-C)."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ragpulse.demo.prometheus import find_prometheus
from ragpulse.demo.traffic import DemoTopics, generate_round, new_run_tag, write_jsonl

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def test_a_round_is_deterministic_and_has_every_kind_of_message() -> None:
    first = generate_round(3, now=NOW)
    assert first == generate_round(3, now=NOW)
    assert generate_round(4, now=NOW) != first  # fresh ids every round
    topics = DemoTopics()
    by_topic: dict[str, int] = {}
    for message in first:
        assert message.topic is not None
        by_topic[message.topic] = by_topic.get(message.topic, 0) + 1
    assert by_topic[topics.otlp] >= 20 and by_topic[topics.feedback] >= 5
    traces = []
    for message in first:
        if message.topic != topics.traces:
            continue
        try:
            record = json.loads(message.value)
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue
        if (
            isinstance(record, dict)
            and isinstance(record.get("question"), str)
            and "tags" in record
        ):
            traces.append(record)
    assert len(traces) >= 60
    tenants = {t["tags"]["tenant"] for t in traces}
    assert tenants == {"bank", "shop", "hr"}
    assert any("relevant_ids" in t for t in traces) and any("relevance" in t for t in traces)
    assert any("reference" in t for t in traces) and any("judge_label" in t for t in traces)
    assert any(t["cache"]["hit"] for t in traces) and any(t["turn"] >= 3 for t in traces)
    assert any(any("а" <= ch <= "я" for ch in t["question"]) for t in traces)


def _ids(messages: list[Any]) -> tuple[set[str], set[str], list[datetime]]:
    """Trace ids (JSON, feedback, OTLP), session ids and trace timestamps of a round."""
    traces: set[str] = set()
    sessions: set[str] = set()
    stamps: list[datetime] = []
    for message in messages:
        if message.topic == DemoTopics().otlp:
            traces.add(message.key.decode())
            continue
        try:
            record = json.loads(message.value)
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(record, dict) and record.get("type") == "feedback":
            continue
        if isinstance(record, dict) and isinstance(record.get("question"), str):
            traces.add(record["trace_id"])
            sessions.add(record["session_id"])
            stamps.append(datetime.fromisoformat(record["timestamp"]))
    return traces, sessions, stamps


def test_a_restarted_demo_never_replays_ids_of_the_kept_database() -> None:
    """Each `ragpulse demo` start tags its ids afresh: the same round numbers of two runs
    share no trace or session id, so a restart stores new traces at once."""
    first_run, second_run = new_run_tag(), new_run_tag()
    assert first_run != second_run
    before = datetime.now(UTC)
    first = _ids(generate_round(0, run=first_run))
    second = _ids(generate_round(0, run=second_run))
    assert len(first[0]) > 60 and len(second[0]) > 60
    assert first[0].isdisjoint(second[0]) and first[1].isdisjoint(second[1])
    assert all(i.startswith(first_run) for i in first[0] if "-" in i)  # JSON ids
    otlp = [i for i in second[0] if "-" not in i]
    assert otlp and all(len(i) == 32 and i.startswith(second_run) for i in otlp)
    # Timestamps are now: inside the last ten minutes, so the 1h windows hold them.
    for stamp in first[2] + second[2]:
        assert before - timedelta(minutes=11) <= stamp <= datetime.now(UTC)
    with pytest.raises(ValueError, match="hex"):
        generate_round(0, run="not-hex")


def test_a_round_holds_no_trace_before_the_demo_started() -> None:
    """Issue 39: the demo passes its start time, so a minute-old demo holds a minute of
    traffic, not ten minutes of backdated traces (the history `explain` reports)."""
    started = NOW - timedelta(minutes=1)
    squeezed = _ids(generate_round(2, now=NOW, run="ab12", not_before=started))[2]
    assert len(squeezed) > 60
    assert all(started <= stamp <= NOW for stamp in squeezed)
    assert max(squeezed) - min(squeezed) > timedelta(seconds=30)  # spread, not one instant
    # a demo running for longer than a round's ten minutes: the rounds are as they were
    old = NOW - timedelta(hours=1)
    assert generate_round(2, now=NOW, run="ab12", not_before=old) == generate_round(
        2, now=NOW, run="ab12"
    )
    assert min(_ids(generate_round(2, now=NOW))[2]) < NOW - timedelta(minutes=5)


def test_write_jsonl_for_produce_and_evaluate(tmp_path: Path) -> None:
    with_feedback = write_jsonl(tmp_path / "all.jsonl", rounds=1, now=NOW)
    traces_only = write_jsonl(tmp_path / "traces.jsonl", rounds=1, now=NOW, feedback=False)
    assert with_feedback > traces_only > 60
    for line in (tmp_path / "traces.jsonl").read_text(encoding="utf-8").splitlines():
        assert "question" in json.loads(line)


def _ragpulse(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragpulse.cli", *argv],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _header(process: subprocess.Popen[str]) -> Iterator[str]:
    """The lines the demo prints at start, up to "Ctrl-C to stop"."""
    assert process.stdout is not None
    for _ in range(40):
        line = process.stdout.readline()
        yield line
        if "Ctrl-C" in line or not line:
            return


def _check_prometheus(header: str, metrics_url: str) -> str | None:
    """The demo's Prometheus (when installed) scrapes its /metrics with the shipped rules,
    and the header says how to draw the dashboards from it."""
    if find_prometheus() is None:
        assert "prometheus not installed: install the `prometheus` package" in header
        return None
    line = next(x for x in header.splitlines() if x.strip().startswith("prometheus"))
    url = line.split()[1]
    assert "ragpulse report --output report.html" in header
    assert f"elsewhere add --prometheus {url}" in header
    target = metrics_url.split("/")[2]
    # a scrape times out at the 5 s interval: on a loaded CI machine the demo's first
    # minute (the embedder loading, the first topics) can make the first few fail
    deadline = time.monotonic() + 90
    while True:
        with urllib.request.urlopen(f"{url}/api/v1/targets", timeout=5) as response:
            targets = json.loads(response.read())["data"]["activeTargets"]
        if any(t["scrapeUrl"].split("/")[2] == target and t["health"] == "up" for t in targets):
            break
        assert time.monotonic() < deadline, [
            (t["health"], t.get("lastError"), t.get("lastScrapeDuration")) for t in targets
        ]
        time.sleep(0.5)
    with urllib.request.urlopen(f"{url}/api/v1/rules", timeout=5) as response:
        groups = json.loads(response.read())["data"]["groups"]
    shipped = Path(__file__).resolve().parents[2] / "dashboards" / "prometheus" / "rules"
    # the shipped rules, the SLO ones generated from the demo's SLOs (the example file's)
    generated = Path(header.split("  database   sqlite:///")[1].split()[0]).parent / "prometheus"
    slo_files = {str(generated / "rules" / p.name) for p in shipped.glob("slo-*.yml")}
    others = {str(p) for p in shipped.glob("*.yml") if not p.name.startswith("slo-")}
    assert {g["file"] for g in groups} == others | slo_files
    for path in slo_files:
        assert Path(path).read_text() == (shipped / Path(path).name).read_text()
    with urllib.request.urlopen(f"{url}/api/v1/status/flags", timeout=5) as response:
        flags = json.loads(response.read())["data"]
    assert "exemplar-storage" in flags["enable-feature"]  # the score histograms' trace ids
    return url


def _sdk_traces(database: Path) -> int:
    """Traces the demo's OpenTelemetry SDK apps sent through the receiver, stored."""
    if not database.exists():
        return 0
    with sqlite3.connect(database) as conn:
        try:
            row = conn.execute(
                "SELECT count(*) FROM traces WHERE source = 'otlp' "
                "AND json_extract(tags, '$.channel') = 'otlp-app'"
            ).fetchone()
        except sqlite3.OperationalError:
            return 0
    return int(row[0])


def _wait_for_sdk_traces(database: Path, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while _sdk_traces(database) == 0:
        assert time.monotonic() < deadline, "no trace came through the receiver"
        time.sleep(0.5)


@pytest.mark.slow
@pytest.mark.timeout(200)  # 45 s of traffic + up to 90 s for the SDK apps + the checks
def test_demo_runs_everything_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPULSE_")}
    env.update(
        {
            "RAGPULSE_EXPORTER__PORT": "0",
            "RAGPULSE_RECEIVER__PORT": "0",
            "RAGPULSE_SCHEDULER__INITIAL_DELAY_S": "3600",
        }
    )
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ragpulse.cli",
            "demo",
            "--port",
            "0",
            "--rate",
            "200",
        ],
        env=env,
        cwd=tmp_path,  # the default --dir, .demo, under it
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    database = tmp_path / ".demo" / "ragpulse.db"
    try:
        deadline = time.monotonic() + 45
        stored = 0
        while time.monotonic() < deadline and stored < 150:
            time.sleep(0.5)
            if database.exists():
                with sqlite3.connect(database) as conn:
                    try:
                        stored = conn.execute("SELECT count(*) FROM traces").fetchone()[0]
                    except sqlite3.OperationalError:
                        stored = 0
        header = "".join(_header(process))
        metrics_url = next(
            line.split()[1] for line in header.splitlines() if line.strip().startswith("metrics")
        )
        receiver_url = next(
            line.split()[1] for line in header.splitlines() if line.strip().startswith("receiver")
        )
        _wait_for_sdk_traces(database)
        with urllib.request.urlopen(metrics_url, timeout=10) as response:
            exposition = response.read().decode()
        with urllib.request.urlopen(receiver_url + "/readyz", timeout=10) as response:
            assert response.status == 200
        prometheus_url = _check_prometheus(header, metrics_url)
        # a second terminal in the same folder finds the demo's store without settings
        while_running = _ragpulse(["traces", "--metric", "hit_rate@1"], env, tmp_path)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert "broker     127.0.0.1:" in header and "stopped: consumed" in out
    # the judge metrics are off in this demo, and the start-up text says how to turn them on
    assert "judge      OFF" in header and "make demo JUDGE=local" in header
    settings = tmp_path / ".demo" / "settings.yaml"
    assert f"elsewhere: ragpulse --config {settings} COMMAND" in header
    assert while_running.returncode == 0, while_running.stderr
    assert f"using the running demo's settings ({settings})" in while_running.stderr
    # once it stopped, a missing store points at the demo's settings, not at `migrate`
    after = _ragpulse(["traces", "--metric", "hit_rate@1"], env, tmp_path)
    assert after.returncode == 2
    assert f"--config {settings}" in after.stderr and "migrate" not in after.stderr
    if prometheus_url is not None:  # stopped with the demo
        with pytest.raises(OSError):
            urllib.request.urlopen(f"{prometheus_url}/-/ready", timeout=2)
        assert (tmp_path / ".demo" / "prometheus" / "data").is_dir()
    with sqlite3.connect(database) as conn:
        sources = dict(conn.execute("SELECT source, count(*) FROM traces GROUP BY source"))
        reasons = {r for (r,) in conn.execute("SELECT DISTINCT reason FROM dead_letters")}
    assert sources.get("json", 0) >= 100
    assert "ragpulse_traces_stored_total" in exposition
    # a part of the traffic came as OTLP through the receiver, from the SDK apps
    accepted = re.search(
        r'^ragpulse_receiver_spans_total\{outcome="accepted"\} (\S+)$', exposition, re.M
    )
    assert accepted is not None and float(accepted.group(1)) > 0
    assert reasons <= {"invalid_json", "missing_field", "wrong_type", "not_utf8", "empty"}
