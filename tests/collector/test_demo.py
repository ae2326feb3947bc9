"""The bundled sample traffic and `ragpulse demo` end to end (real broker, SQLite, Ctrl-C)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from collector.demo.traffic import DemoTopics, generate_round, write_jsonl

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


def test_write_jsonl_for_produce_and_evaluate(tmp_path: Path) -> None:
    with_feedback = write_jsonl(tmp_path / "all.jsonl", rounds=1, now=NOW)
    traces_only = write_jsonl(tmp_path / "traces.jsonl", rounds=1, now=NOW, feedback=False)
    assert with_feedback > traces_only > 60
    for line in (tmp_path / "traces.jsonl").read_text(encoding="utf-8").splitlines():
        assert "question" in json.loads(line)


def _header(process: subprocess.Popen[str]) -> Iterator[str]:
    """The lines the demo prints at start, up to "Ctrl-C to stop"."""
    assert process.stdout is not None
    for _ in range(20):
        line = process.stdout.readline()
        yield line
        if "Ctrl-C" in line or not line:
            return


@pytest.mark.timeout(90)
def test_demo_runs_everything_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPULSE_")}
    env.update({"RAGPULSE_EXPORTER__PORT": "0", "RAGPULSE_SCHEDULER__INITIAL_DELAY_S": "3600"})
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "collector.cli",
            "demo",
            "--dir",
            str(tmp_path),
            "--port",
            "0",
            "--rate",
            "200",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    database = tmp_path / "ragpulse.db"
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
        with urllib.request.urlopen(metrics_url, timeout=10) as response:
            exposition = response.read().decode()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert "broker     127.0.0.1:" in header and "stopped: consumed" in out
    with sqlite3.connect(database) as conn:
        sources = dict(conn.execute("SELECT source, count(*) FROM traces GROUP BY source"))
        reasons = {r for (r,) in conn.execute("SELECT DISTINCT reason FROM dead_letters")}
    assert sources.get("json", 0) >= 100
    assert "ragpulse_traces_stored_total" in exposition
    assert reasons <= {"invalid_json", "missing_field", "wrong_type", "not_utf8", "empty"}
