"""One place pins the instrumentation libraries the OTLP mapping is tested against (the
`instrumentation` extra); the README's table (which the site's "Connect your app" page
includes) names exactly those versions, and they are the ones installed (so a test run is
a run against the versions the README promises)."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _pins() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return dict(p.split("==") for p in project["optional-dependencies"]["instrumentation"])


def _readme_table() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("**Your instrumentation → what ragpulse reads.**")
    return text[start : text.index("\n\n", text.index("| your instrumentation", start))]


def test_the_readme_table_names_every_pinned_instrumentation_version() -> None:
    table = _readme_table()
    for name, version in _pins().items():
        if name.startswith(("openinference-", "opentelemetry-", "langchain-", "llama-index")):
            assert re.search(rf"`{re.escape(name)}` {re.escape(version)}\b", table), name


def test_the_pinned_versions_are_installed() -> None:
    for name, version in _pins().items():
        assert importlib.metadata.version(name) == version, name
