"""The running demo's settings are found from the folder it was started in, and only while
it runs; a stopped demo's settings are pointed at, never used silently."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ragpulse.commands.demo import path_line
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


def test_the_banner_says_how_a_second_terminal_gets_ragpulse(monkeypatch: Any) -> None:
    """Issue 39: `make demo` runs `.venv/bin/ragpulse`, and a second terminal has no
    `ragpulse` on its PATH: the start-up text says what to type there."""
    if sys.prefix == sys.base_prefix:
        pytest.skip("not in a virtual environment")
    venv = Path(sys.prefix)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    line = path_line(venv.parent)
    assert line is not None and f"`. {venv.name}/bin/activate`" in line.replace("./", "")
    assert f"`. {venv}/bin/activate`" in (path_line(Path("/nowhere")) or "")
    monkeypatch.setenv("PATH", f"{venv / 'bin'}:/usr/bin:/bin")
    assert path_line(venv.parent) is None  # `ragpulse` is on PATH: nothing to say
