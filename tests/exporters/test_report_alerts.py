"""The report's alerts through a real Prometheus: what fires at the report's time counts
(an SLO's fast burn as a page, its slow burn as a ticket, each on the tier of its SLI's
metric), and an alert that fired in the range but resolved before its end is listed as
resolved, never as firing, neither in the verdict nor in the status row's table.

The rules carry the labels the generated SLO rules give their alerts
(`dashboards.slo_rules.labels`), on series the test switches on and off."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from collector.settings.openslo import load_openslo
from dashboards import slo_rules
from dashboards.boards import SLO_EXAMPLE
from exporters.report.dashboards import load_dashboard
from exporters.report.firing import FIRING, alerts_at, fill
from exporters.report.live import TimeRange, grafana_variables, render_panel
from exporters.report.promapi import PromClient
from exporters.report.verdict import judge_all
from exporters.report.verdict_data import fetch_all, tiers
from exporters.report.verdict_html import headline, verdict_html
from tests.fixtures.scrape_target import scrape_target

OVERVIEW = Path(__file__).resolve().parents[2] / "dashboards" / "grafana" / "dashboards"


SWITCHES: dict[str, int] = {}
"""Each burn series' value (1: its rule's condition holds), read at every scrape."""


@pytest.fixture
def switches() -> Iterator[str]:
    SWITCHES.clear()
    SWITCHES.update({"fast-acme": 1, "slow-acme": 1, "slow-globex": 1})

    def render() -> str:
        return "".join(
            f'ragpulse_test_burn{{which="{k}",tenant="{k.split("-")[1]}"}} {v}\n'
            for k, v in SWITCHES.items()
        )

    with scrape_target(render) as target:
        yield target


def _rules(path: Path) -> Path:
    specs = {s.name: s for s in load_openslo(SLO_EXAMPLE)}
    summary = "burn {{ $labels.which }}{{ if $labels.tenant }} for {{ $labels.tenant }}{{ end }}"

    def rule(name: str, slo: str, word: str, which: str) -> dict[str, Any]:
        return {
            "alert": name,
            "expr": f'ragpulse_test_burn{{which=~"{which}-.*"}} == 1',
            "labels": slo_rules.labels(specs[slo], word),
            "annotations": {"summary": summary, "runbook_url": f"http://docs/{name}/"},
        }

    groups = [
        {
            "name": "burns",
            "rules": [
                rule("RagpulseSloFastBurn", "retrieval-hit", "page", "fast"),
                rule("RagpulseSloSlowBurn", "faithfulness", "ticket", "slow"),
            ],
        }
    ]
    path.write_text(yaml.safe_dump({"groups": groups}))
    return path


def _panel(board: Any, title: str) -> Any:
    return next(p for p in board.panels if p.title == title)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_the_report_counts_what_fires_at_its_time_and_lists_the_resolved_apart(
    prometheus_server: Any, switches: str, tmp_path: Path
) -> None:
    prom = prometheus_server([switches], [_rules(tmp_path / "rules.yml")])
    assert len(prom.wait_for(f"count({FIRING}) == 3", timeout=60)) == 1, prom.log.read_text()
    time.sleep(5)  # long enough for a range read's steps to see it
    SWITCHES["slow-globex"] = 0  # its slow burn ends
    gone = 'ALERTS{alertstate="firing",tenant="globex"}'
    deadline = time.monotonic() + 30
    while prom.query(gone) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not prom.query(gone)
    time.sleep(2)
    client = PromClient(prom.url)
    now = time.time()
    start = now - 600
    # over the range the ended series is there: a range read would list it as firing
    in_range = client.query_range(FIRING, start, now, 1.0)
    assert {s.labels["tenant"] for s in in_range} == {"acme", "globex"}

    found = alerts_at(client, now, start)
    firing = [(a.name, a.severity, a.metric, a.tenant) for a in found if a.firing]
    assert firing == [
        ("RagpulseSloFastBurn", "critical", "hit_rate@5", "acme"),
        ("RagpulseSloSlowBurn", "warning", "faithfulness", "acme"),
    ]
    (resolved,) = [a for a in found if not a.firing]
    assert (resolved.name, resolved.tenant, resolved.metric) == (
        "RagpulseSloSlowBurn", "globex", "faithfulness"
    )  # fmt: skip
    assert resolved.until is not None and now - 35 < resolved.until < now
    # its runbook text comes from its rule, its labels filled in
    assert resolved.summary == "burn slow-globex for globex"
    assert resolved.runbook_url == "http://docs/RagpulseSloSlowBurn/"
    assert found[0].summary == "burn fast-acme for acme"  # expanded by Prometheus

    # the verdict: the fast burn pages its SLI's tier, the slow burn is to watch on its
    # own, the resolved one counts nowhere
    board = load_dashboard(OVERVIEW / "overview.json")
    tier_list, stats = tiers(board)
    readings, alerts, slices = fetch_all(client, tier_list, stats, now, start)
    verdict = judge_all(tier_list, readings, alerts, slices)
    levels = {t.tier.title.split(" (")[0]: t.level for t in verdict.tiers}
    assert levels["Retrieval"] == "paging", levels  # hit_rate@5's tier
    assert levels["Generation and end-to-end"] == "watch", levels  # faithfulness's
    assert verdict.level == "paging" and verdict.other_alerts == ()
    assert [a.tenant for a in verdict.resolved] == ["globex"]
    assert verdict.pages_and_tickets() == (1, 1)
    assert headline(verdict).endswith("; firing: 1 page, 1 ticket; 1 resolved in range")
    html = verdict_html(verdict, stats, {}, now, "")
    assert html.count('data-state="resolved"') == 1 and "Resolved in range" in html
    assert html.count('data-state="firing"') == 2

    # the status row: one page, one ticket, two alerts in the table (not the resolved one)
    span = TimeRange(start, now, 2.0)
    values = grafana_variables(board, {}, span, 1.0)
    for title, count in (("Paging", 1), ("Tickets", 1)):
        shown = render_panel(client, _panel(board, title), values, span)
        assert f'data-value="{float(count)!r}"' in shown.body, (title, shown.body)
    table = render_panel(client, _panel(board, "Firing alerts"), values, span).body
    assert table.count("RagpulseSlo") == 2 and "globex" not in table, table


def test_a_rules_annotation_is_filled_with_the_alerts_labels() -> None:
    template = (
        "{{ $labels.metric }} worse{{ if $labels.tenant }} for {{ $labels.tenant }}{{ else }}"
        ' overall{{ end }} at {{ $value | printf "%.1f" }}x.{{ with query "x" }}{{ . }}{{ end }}'
    )
    assert fill(template, {"metric": "mrr", "tenant": "acme"}) == "mrr worse for acme at …x."
    assert fill(template, {"metric": "mrr"}) == "mrr worse overall at …x."
    assert fill("plain", {}) == "plain"
