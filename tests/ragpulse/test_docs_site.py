"""The documentation site: its generated references are what the code says now and name
every setting, command, flag, metric, series and alert; `mkdocs build --strict` passes
(a broken link or anchor fails it); and the built site renders in headless Chromium with
its navigation and without console errors."""

from __future__ import annotations

import argparse
import functools
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from collector.settings import Settings
from evaluators.registry import declared
from ragpulse.cli import build_parser
from ragpulse.docs import site
from tests.exporters.test_readme_series import _exported

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
MKDOCS = Path(sys.executable).with_name("mkdocs")


def _page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def test_the_generated_pages_are_up_to_date() -> None:
    assert site.stale() == [], "run `python -m ragpulse.docs` and commit docs/"


def _env_vars(model: type[BaseModel], prefix: str = "RAGPULSE_") -> list[str]:
    out = []
    for name, field in model.model_fields.items():
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            out += _env_vars(kind, f"{prefix}{name.upper()}__")
        else:
            out.append(prefix + name.upper())
    return out


def test_the_settings_page_has_every_environment_variable() -> None:
    page = _page("reference/settings.md")
    names = _env_vars(Settings)
    assert len(names) > 100
    for name in names:
        assert f"| `{name}` |" in page, name


def _commands(
    parser: argparse.ArgumentParser, path: str = "ragpulse"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _commands(child, f"{path} {name}")


def test_the_cli_page_has_every_command_and_flag() -> None:
    page = _page("reference/cli.md")
    sections = {s.split("`", 1)[0]: s for s in page.split("\n## `")[1:]}
    commands = list(_commands(build_parser()))
    assert len(commands) > 15
    for path, parser in commands:
        assert path in sections, path
        for action in parser._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    flag = re.compile(rf"^\| `(?:[^`]*, )?{re.escape(option)}[ ,`]")
                    rows = sections[path].splitlines()
                    assert any(flag.match(row) for row in rows), (path, option)


def test_the_metrics_page_has_every_metric_with_its_direction() -> None:
    page = _page("reference/metrics.md")
    for name, spec in declared().items():
        section = page.split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]
        assert f"| [`{name}`](#{name.lower()}) |" in page, name
        assert spec.description.split()[0] in section, name


def test_the_series_page_has_every_exported_family() -> None:
    page = _page("reference/series.md")
    listed = {line.split("`")[1] for line in page.splitlines() if line.startswith("| `")}
    assert listed == _exported()


def test_the_alerts_page_has_every_alert() -> None:
    page = _page("reference/alerts.md")
    for path in (ROOT / "dashboards" / "prometheus" / "rules").glob("*.yml"):
        for group in yaml.safe_load(path.read_text(encoding="utf-8"))["groups"]:
            for rule in group["rules"]:
                if "alert" not in rule:
                    continue  # a recording rule (the SLO files hold theirs beside the alerts)
                assert f"\n## {rule['alert']}\n" in page, rule["alert"]
                assert rule["expr"].strip().split("\n")[0] in page, rule["alert"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return out


def test_the_site_builds_strictly(built: Path) -> None:
    for page in ("index.html", "reference/settings/index.html", "runbooks/index.html"):
        assert (built / page).is_file(), page
    for alert in yaml.safe_load((ROOT / "dashboards/prometheus/rules/operations.yml").read_text())[
        "groups"
    ][0]["rules"]:
        assert (built / "runbooks" / alert["alert"] / "index.html").is_file()


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    """The strict build is a real check: the same site with one bad link does not build."""
    copy = tmp_path / "repo"
    shutil.copytree(DOCS, copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    index = copy / "docs" / "index.md"
    index.write_text(index.read_text() + "\n[gone](no-such-page.md)\n")
    result = subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(tmp_path / "out")],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=120,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode != 0
    assert "no-such-page.md" in result.stdout + result.stderr


@pytest.fixture
def served(built: Path) -> Iterator[str]:
    handler = functools.partial(_QuietHandler, directory=str(built))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_the_site_renders_in_chromium(served: str, chromium: Any) -> None:
    for path, heading in (
        ("", "ragpulse"),
        ("reference/settings/", "Settings"),
        ("runbooks/RagpulseQualityDropPage/", "RagpulseQualityDropPage"),
    ):
        page = chromium.open(served + path)
        assert page.console_errors == [], (path, page.console_errors)
        title = "document.querySelector('article h1').firstChild.textContent"
        assert page.evaluate(title) == heading, path
        nav = page.evaluate("document.querySelector('nav.md-nav--primary').textContent")
        links = page.evaluate("document.querySelectorAll('nav.md-nav--primary a').length")
        assert links > 30, path
        for entry in ("Start here", "How-to guides", "Concepts", "Reference", "Runbooks"):
            assert entry in nav, (path, entry)
    settings = chromium.open(served + "reference/settings/")
    rows = settings.evaluate("document.querySelectorAll('article table tbody tr').length")
    assert rows > 100


def test_reference_tables_do_not_break_names(served: str, chromium: Any) -> None:
    """The theme let code break anywhere: `retrieval_empty_rate` showed as
    `retrieval_e|mpty_rate` in the metrics table. A name (letters, digits, `_.@`) is drawn
    on one line wherever it is; the name column's code is, whatever it holds."""
    broken = (
        "Array.from(document.querySelectorAll('article table code'))"
        ".filter(c => c.getClientRects().length > 1"
        " && (/^[\\w.@]+$/.test(c.textContent)"
        " || c.closest('td') === c.closest('tr').cells[0]))"
        ".map(c => c.textContent)"
    )
    for path in ("metrics", "settings", "series", "alerts", "cli"):
        page = chromium.open(f"{served}reference/{path}/")
        assert page.evaluate("document.querySelectorAll('article table code').length") > 10
        assert page.evaluate(broken) == [], path
