"""The shipped alert rules and scrape config pass promtool, and every alert has unit tests."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

PROM = Path(__file__).resolve().parents[2] / "dashboards" / "prometheus"
PROMTOOL = shutil.which("promtool") or (
    "/usr/bin/promtool" if Path("/usr/bin/promtool").exists() else None
)
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool is not installed (Debian package prometheus)"
)


def _promtool(*args: str, cwd: Path = PROM) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    # 600 s: the SLO tests' fixtures span days (about 40 s of CPU in all), on shared cores
    return subprocess.run([PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def _alerts() -> dict[str, dict[str, object]]:
    alerts = {}
    for path in sorted((PROM / "rules").glob("*.yml")):
        for group in yaml.safe_load(path.read_text())["groups"]:
            for rule in group["rules"]:
                if "alert" in rule:
                    alerts[rule["alert"]] = rule
    return alerts


@needs_promtool
def test_rules_and_config_are_valid() -> None:
    rules = sorted(str(p.relative_to(PROM)) for p in (PROM / "rules").glob("*.yml"))
    checked = _promtool("check", "rules", *rules)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    config = _promtool("check", "config", "prometheus.yml")
    assert config.returncode == 0, config.stdout + config.stderr


PROMTOOL_TESTS = sorted(p.name for p in (PROM / "tests").glob("*.yml"))
"""One test per file: the SLO files take ~20 s each on a loaded 2-core machine, and the
workers share them out instead of one test running them all past its timeout."""


@pytest.mark.slow
@needs_promtool
@pytest.mark.parametrize("test_file", PROMTOOL_TESTS)
def test_promtool_unit_tests_pass(test_file: str) -> None:
    result = _promtool("test", "rules", test_file, cwd=PROM / "tests")
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_has_a_unit_test_summary_and_description() -> None:
    tested = set()
    for path in (PROM / "tests").glob("*.yml"):
        for test in yaml.safe_load(path.read_text())["tests"]:
            for case in test.get("alert_rule_test", []):
                if case.get("exp_alerts"):
                    tested.add(case["alertname"])
    alerts = _alerts()
    assert set(alerts) - tested == set()
    for name, rule in alerts.items():
        annotations = rule.get("annotations", {})
        assert isinstance(annotations, dict)
        assert annotations.get("summary") and annotations.get("description"), name


def test_seed_004_thresholds_are_alerted() -> None:
    exprs = " ".join(str(rule["expr"]) for rule in _alerts().values())
    for metric, threshold in [
        ("hit_rate@1", "0.5"),
        ("mrr", "0.5"),
        ("ndcg@10", "0.5"),
        ("faithfulness_rating", "0.7"),
        ("e2e_score", "0.6"),
        ("judge_accuracy", "0.85"),
        ("judge_consistency", "0.85"),
    ]:
        # overall and tenants only: no alert reads a version's nor a topic's series
        raw = f'ragpulse_metric_value{{metric="{metric}",window="24h",version="",topic=""}}'
        assert f"{raw} < {threshold}" in exprs or f"{raw}) < {threshold}" in exprs, metric
