"""The running demo's settings, found by every other command started in the same folder.

While `ragpulse demo` runs, its folder (default `.demo/`) holds `settings.yaml` (the
database, broker, /metrics and SLOs it uses: a normal `--config` file) and `demo.json`
(the demo's process id and its Prometheus URL). A command run without `--config` in the
folder the demo was started from finds them, so `ragpulse traces`, `report`, `explain`,
`compare`, `plan`, `jobs` and `slo` in a second terminal read the demo's store and SLOs;
environment variables still win over the file, as always. Once the demo has stopped, the
files say where its store is (`stopped_demo`), for errors that would otherwise suggest
creating an empty database.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

DEFAULT_DIR = ".demo"
SETTINGS = "settings.yaml"
STATE = "demo.json"


@dataclass(frozen=True)
class Demo:
    """A demo's hand-off files, and what they say."""

    settings: Path
    pid: int
    prometheus: str | None = None


def write(directory: Path, settings: dict[str, Any], prometheus: str | None) -> Path:
    """Leave the hand-off for this process's demo; returns the settings file."""
    path = directory / SETTINGS
    header = (
        "# Written by `ragpulse demo` while it runs (and left when it stops): the settings\n"
        "# of its embedded store, broker, /metrics and SLOs. Other commands started in the folder\n"
        "# the demo was started from use it by default; elsewhere pass --config with this\n"
        "# file's path.\n"
    )
    path.write_text(header + yaml.safe_dump(settings, sort_keys=True), encoding="utf-8")
    state = {"pid": os.getpid(), "prometheus": prometheus}
    (directory / STATE).write_text(json.dumps(state), encoding="utf-8")
    return path


def stopped(directory: Path) -> None:
    """The demo has stopped: its settings stay (they say where the store is), not its pid."""
    (directory / STATE).unlink(missing_ok=True)


def running_demo(cwd: Path, folder: str = DEFAULT_DIR) -> Demo | None:
    """The demo running from `cwd` (its hand-off in `cwd/.demo` and its process alive)."""
    directory = cwd / folder
    try:
        state = json.loads((directory / STATE).read_text(encoding="utf-8"))
        pid = int(state["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    settings = directory / SETTINGS
    if not settings.is_file() or not _alive(pid):
        return None
    prometheus = state.get("prometheus")
    return Demo(settings, pid, prometheus if isinstance(prometheus, str) else None)


def stopped_demo(cwd: Path, folder: str = DEFAULT_DIR) -> Path | None:
    """The settings file of a demo that ran from `cwd` and has stopped, if any."""
    settings = cwd / folder / SETTINGS
    return settings if settings.is_file() and running_demo(cwd, folder) is None else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True
