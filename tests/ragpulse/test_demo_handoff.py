"""The running demo's settings are found from the folder it was started in, and only while
it runs; a stopped demo's settings are pointed at, never used silently."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ragpulse.demo import handoff


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_found_while_the_demo_process_lives(tmp_path: Path) -> None:
    directory = tmp_path / ".demo"
    directory.mkdir()
    settings = handoff.write(directory, {"database": {"url": "sqlite:///x.db"}}, "http://p")
    demo = handoff.running_demo(tmp_path)
    assert demo is not None and demo.settings == settings and demo.prometheus == "http://p"
    assert handoff.stopped_demo(tmp_path) is None


def test_a_dead_demo_is_not_used_but_pointed_at(tmp_path: Path) -> None:
    directory = tmp_path / ".demo"
    directory.mkdir()
    settings = handoff.write(directory, {}, None)
    (directory / handoff.STATE).write_text(json.dumps({"pid": _dead_pid()}), encoding="utf-8")
    assert handoff.running_demo(tmp_path) is None
    assert handoff.stopped_demo(tmp_path) == settings
    handoff.stopped(directory)
    assert handoff.stopped_demo(tmp_path) == settings


def test_nothing_found_without_a_demo(tmp_path: Path) -> None:
    assert handoff.running_demo(tmp_path) is None
    assert handoff.stopped_demo(tmp_path) is None
