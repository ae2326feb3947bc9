"""The generated SLO rules: the workbook's thresholds, and the minimum count of bad events
that keeps sampled scores from paging on a handful of events (promtool, both ways)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from collector.settings.openslo import load_openslo
from dashboards import boards, slo_rule_tests, slo_rules
from tests.dashboards.test_rules import PROMTOOL, needs_promtool

FAITHFULNESS = load_openslo(boards.SLO_EXAMPLE)[0]


def test_alerts_follow_the_workbook() -> None:
    alerts = {r["alert"]: r for r in slo_rules.alert_rules(FAITHFULNESS)}
    page, ticket = alerts["RagpulseSloFastBurn"], alerts["RagpulseSloSlowBurn"]
    # budget 0.05: 14.4x -> 0.72 over 1h and 5m, 6x -> 0.3 over 6h and 30m, ...
    # with the fewest bad events that are evidence of a burn: 3 in 1h, 5 in 6h, 11 in 1d
    assert (
        'ragpulse_slo:error_ratio:rate1h{slo="faithfulness"} > 0.72 and on (slo, tenant) '
        'ragpulse_slo:bad_events:increase1h{slo="faithfulness"} >= 3' in page["expr"]
    )
    assert 'ragpulse_slo:error_ratio:rate5m{slo="faithfulness"} > 0.72' in page["expr"]
    assert (
        'rate6h{slo="faithfulness"} > 0.3 and on (slo, tenant) '
        'ragpulse_slo:bad_events:increase6h{slo="faithfulness"} >= 5' in page["expr"]
    )
    assert 'increase1d{slo="faithfulness"} >= 11' in ticket["expr"]
    assert 'ragpulse_slo:error_ratio:rate3d{slo="faithfulness"} > 0.05' in ticket["expr"]
    # the SLO's page and ticket are the rule labels every ragpulse alert uses, with the
    # SLI's metric and tier (the report's tiers, Alertmanager's grouping)
    assert page["labels"] == {
        "severity": "critical", "slo": "faithfulness", "metric": "faithfulness",
        "tier": "generation",
    }  # fmt: skip
    assert ticket["labels"] == {**page["labels"], "severity": "warning"}
    recorded = {r["record"] for r in slo_rules.recording_rules(FAITHFULNESS)}
    assert {"ragpulse_slo:error_budget_remaining", "ragpulse_slo:burn_rate:rate1h"} <= recorded
    assert 'increase(ragpulse_slo_events_total{slo="faithfulness"}[28d])' in str(
        slo_rules.recording_rules(FAITHFULNESS)
    )


def test_minimum_bad_events_tell_a_burn_from_chance() -> None:
    # 3 bad events with at most 4 in the window: P(>= 3 of 4 | 5% bad) = 4.8e-4 <= 1e-3,
    # where 2 of 2 would be 2.5e-3
    assert slo_rules.min_bad_events(14.4, 0.05) == 3
    assert slo_rules.min_bad_events(14.4, 0.01) == 4
    # a ratio just above the budget is no evidence against it: no minimum
    assert slo_rules.min_bad_events(1.0, 0.05) == 1


def _run(
    tmp_path: Path, case: dict[str, object], method: slo_rules.Method = "min-count",
    z: float = 0.0, hold: slo_rules.Hold = slo_rules.HOLD,
) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """One promtool test case against the faithfulness SLO's rules of `method` and `hold`."""
    (tmp_path / "rules").mkdir(parents=True)
    (tmp_path / "tests").mkdir()
    rules = slo_rules.render([FAITHFULNESS], z, method=method, hold=hold)
    (tmp_path / "rules" / "slo.yml").write_text(rules)
    tests = {"rule_files": ["../rules/slo.yml"], "evaluation_interval": "1m", "tests": [case]}
    (tmp_path / "tests" / "case.yml").write_text(yaml.safe_dump(tests, sort_keys=False))
    assert PROMTOOL is not None
    return subprocess.run(
        [PROMTOOL, "test", "rules", "case.yml"],
        cwd=tmp_path / "tests",
        capture_output=True,
        text=True,
        timeout=300,
    )


@needs_promtool
def test_two_bad_of_two_sampled_events_page_only_without_the_minimum(tmp_path: Path) -> None:
    sparse = slo_rule_tests.sparse_test(FAITHFULNESS)
    assert sparse is not None and sparse["name"].endswith(
        "2 of 2 sampled events bad in an hour (a share above 0.72) is no page"
    )
    shipped = _run(tmp_path / "shipped", sparse)
    assert shipped.returncode == 0, shipped.stdout + shipped.stderr
    # the workbook's condition on the point estimate (a bound with z = 0) pages on them
    point = _run(tmp_path / "point", sparse, "wilson", 0.0)
    assert point.returncode != 0
    output = point.stdout + point.stderr
    assert "alertname: RagpulseSloFastBurn" in output and "got:" in output


@needs_promtool
def test_a_burn_with_a_quiet_gap_is_one_page_that_resets_after_it(tmp_path: Path) -> None:
    alerts = {r["alert"]: r for r in slo_rules.alert_rules(FAITHFULNESS)}
    assert alerts["RagpulseSloFastBurn"]["keep_firing_for"] == "90m"
    assert alerts["RagpulseSloSlowBurn"]["keep_firing_for"] == "2h"
    held = slo_rule_tests.hold_test(FAITHFULNESS)
    assert held is not None and "one alert through a burn" in str(held["name"])
    shipped = _run(tmp_path / "shipped", held)
    assert shipped.returncode == 0, shipped.stdout + shipped.stderr
    # without keep_firing_for the good minutes end the page (and the burn pages again)
    before = _run(tmp_path / "before", held, hold=slo_rules.Hold(()))
    assert before.returncode != 0
    assert "got:[]" in before.stdout + before.stderr


def test_every_slo_alert_has_burning_fixtures() -> None:
    specs = load_openslo(boards.SLO_EXAMPLE)
    for severity in ("page", "ticket"):
        names = [t["name"] for t in slo_rule_tests.tests(specs, severity)["tests"]]
        for spec in specs:
            conditions = [a for a in spec.alerts if a.severity == severity]
            burning = [
                n
                for n in names
                if n.startswith(f"{slo_rules.ALERTS[severity]} {spec.name}: a burn")
            ]
            assert len(burning) == len(conditions), (spec.name, severity)
            # an SLO without alerts of a severity (an 80% one pages on nothing) has no tests
            assert any(f"{spec.name}: steady" in n for n in names) == bool(conditions)
    assert any(not any(a.severity == "page" for a in s.alerts) for s in specs)
