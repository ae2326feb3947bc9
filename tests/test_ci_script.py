"""CI ends only the processes it started: no stopping by name in the scripts it runs."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The two commands that end processes by name (spelled in parts so this file has neither).
_BY_NAME_TOOLS = ("p" + "kill", "kill" + "all")
BY_NAME = re.compile(r"^\s*[^#\n]*\b(" + "|".join(_BY_NAME_TOOLS) + r")\b", re.MULTILINE)


def test_ci_and_make_never_stop_processes_by_name() -> None:
    for path in (ROOT / ".ci" / "run", ROOT / ".ci" / "install_llama", ROOT / "Makefile"):
        text = path.read_text(encoding="utf-8")
        assert not BY_NAME.search(text), f"{path.name} stops processes by name"


def test_ci_script_is_valid_bash() -> None:
    result = subprocess.run(
        ["bash", "-n", str(ROOT / ".ci" / "run")], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stderr
