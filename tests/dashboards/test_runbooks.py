"""Every shipped alert (every rule file) has a runbook and a `runbook_url` pointing at its
page in the documentation site, and that page exists; a changed site address rewrites
every link, hand-written files included."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml

from dashboards import build, runbooks
from ragpulse.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "dashboards" / "prometheus" / "rules"


def _alert_rules() -> list[dict[str, object]]:
    out = []
    for path in sorted(RULES.glob("*.yml")):
        for group in yaml.safe_load(path.read_text(encoding="utf-8"))["groups"]:
            out += [rule for rule in group["rules"] if "alert" in rule]
    return out


def test_every_alert_links_its_runbook() -> None:
    rules = _alert_rules()
    assert len(rules) > 20
    for rule in rules:
        alert = str(rule["alert"])
        annotations = rule["annotations"]
        assert isinstance(annotations, dict)
        assert annotations.get("runbook_url") == runbooks.runbook_url(alert), alert


def test_every_runbook_belongs_to_a_shipped_alert_and_has_its_page() -> None:
    alerts = {str(rule["alert"]) for rule in _alert_rules()}
    assert set(runbooks.RUNBOOKS) == alerts
    for alert in alerts:
        page = ROOT / "docs" / runbooks.RUNBOOK_DIR / f"{alert}.md"
        assert page.is_file(), page
        text = page.read_text(encoding="utf-8")
        for heading in ("## What it means", "## Confirm it", "## Common causes", "## Silence"):
            assert heading in text, (alert, heading)
        assert f"alertname={alert}" in text


def test_an_unknown_alert_has_no_runbook() -> None:
    try:
        runbooks.runbook_url("RagpulseNoSuchAlert")
    except ValueError as exc:
        assert "RagpulseNoTraces" in str(exc)
    else:
        raise AssertionError("an alert without a runbook got a url")


def test_another_site_address_rewrites_every_link() -> None:
    elsewhere = "https://docs.example.org/ragpulse/"
    files = build.generated(elsewhere)
    for path in (*build.HAND_WRITTEN, build.RULES, build.DRIFT_TESTS):
        text = files[path]
        assert runbooks.DOCS_URL not in text, path
        assert f"runbook_url: {elsewhere}runbooks/Ragpulse" in text, path


def test_the_runbooks_commands_are_valid_ragpulse_commands() -> None:
    """Every `ragpulse ...` line a runbook tells on-call to run parses with the real CLI
    (its labels in braces filled in), so a renamed flag cannot leave a runbook wrong."""
    parser = build_parser()
    checked = 0
    for book in runbooks.RUNBOOKS.values():
        for command in book.confirm:
            if not command.startswith("ragpulse "):
                continue
            words = shlex.split(re.sub(r"\{(\w+)\}", r"\1", command))[1:]
            try:
                parser.parse_args(words)
            except SystemExit as exc:
                raise AssertionError(f"{book.alert}: {command}") from exc
            checked += 1
    assert checked > 20
