"""Quality SLOs from OpenSLO YAML and from the settings: parsed, validated, one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from collector.settings import (
    DEFAULT_ALERTS,
    BurnAlert,
    ConfigError,
    SloSpec,
    SloSpecError,
    load_settings,
)
from collector.settings.openslo import load_openslo, parse_openslo
from collector.settings.slo_spec import validate

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "slo.yaml"

SLO = """\
apiVersion: openslo/v1
kind: SLO
metadata: {{name: faithful}}
spec:
  budgetingMethod: {budgeting}
  timeWindow: [{{duration: {window}, isRolling: {rolling}}}]
  objectives: [{{target: {target}}}]
  indicator:
    metadata: {{name: faithful}}
    spec:
      ratioMetric:
        counter: true
        good:
          metricSource: {{type: ragpulse, spec: {{metric: {metric}, op: ">=", threshold: 0.7}}}}
        total: {{metricSource: {{type: ragpulse, spec: {{metric: {metric}}}}}}}
"""


def _slo(**overrides: object) -> str:
    fields: dict[str, object] = {
        "budgeting": "Occurrences",
        "window": "28d",
        "rolling": "true",
        "target": 0.95,
        "metric": "faithfulness",
    }
    fields.update(overrides)
    return SLO.format(**fields)


def test_the_example_file() -> None:
    faith, hit, judge = load_openslo(EXAMPLE)
    assert (faith.name, faith.metric, faith.op, faith.threshold) == (
        "faithfulness",
        "faithfulness",
        ">=",
        0.7,
    )
    assert (faith.target, faith.window, faith.window_s) == (0.95, "28d", 28 * 86400.0)
    # the AlertPolicy's conditions, inline and by conditionRef, short windows = long / 12
    assert faith.alerts == (
        BurnAlert("page", 14.4, "1h", "5m"),
        BurnAlert("page", 6.0, "6h", "30m"),
        BurnAlert("ticket", 3.0, "1d", "2h"),
        BurnAlert("ticket", 1.0, "3d", "6h"),
    )
    assert (hit.metric, hit.op, hit.is_good(1.0), hit.is_good(0.0)) == (
        "hit_rate@5",
        "==",
        True,
        False,
    )
    # no alertPolicies: the workbook's, less the 14.4x a 90% SLO cannot reach
    assert hit.alerts == DEFAULT_ALERTS[1:]
    assert (judge.kind, judge.target) == ("success", pytest.approx(0.99))  # targetPercent


def test_a_success_sli() -> None:
    text = _slo().replace('op: ">=", threshold: 0.7', "succeeded: true")
    [spec] = parse_openslo(text)
    assert spec.kind == "success"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            _slo(metric="faithfulnes"),
            "slo 'faithful': unknown metric 'faithfulnes'; known metrics:",
        ),
        (_slo(target=1.2), "slo 'faithful': target 1.2 must lie in (0, 1)"),
        (_slo(metric="judge_accuracy"), "'judge_accuracy' is computed over sets of traces"),
        (_slo(target=0), "slo 'faithful': target 0.0 must lie in (0, 1)"),
        (_slo(window="four weeks"), "slo 'faithful': window 'four weeks' is not a duration"),
        (_slo(rolling="false"), "SLO 'faithful': timeWindow must be rolling"),
        (_slo(budgeting="Timeslices"), "SLO 'faithful': budgetingMethod must be Occurrences"),
        (
            _slo().replace("type: ragpulse", "type: prometheus", 1),
            "good.metricSource.type must be ragpulse",
        ),
        (
            _slo().replace("{metric: faithfulness}", "{metric: mrr}"),
            "good and total must name the same metric",
        ),
        (_slo().replace("openslo/v1", "openslo/v2"), "every document needs apiVersion: openslo/v1"),
        ("kind: [", "<openslo>: not YAML"),
    ],
)
def test_invalid_slos_are_one_line_errors(text: str, error: str) -> None:
    with pytest.raises(SloSpecError) as caught:
        parse_openslo(text)
    message = str(caught.value)
    assert error in message
    assert "\n" not in message


def test_alert_checks() -> None:
    base = SloSpec(name="x", metric="mrr", target=0.95, window="28d")
    with pytest.raises(SloSpecError, match="could never fire"):
        validate(
            SloSpec(
                **{**_fields(base), "target": 0.9, "alerts": (BurnAlert("page", 14.4, "1h", "5m"),)}
            )
        )
    with pytest.raises(SloSpecError, match="short < long <= the SLO window"):
        validate(SloSpec(**{**_fields(base), "alerts": (BurnAlert("page", 2, "5m", "1h"),)}))
    with pytest.raises(SloSpecError, match="op '=>' must be one of"):
        validate(SloSpec(**{**_fields(base), "op": "=>"}))
    with pytest.raises(ConfigError, match="declared twice"):
        load_settings(
            slo={"objectives": [_fields(base, alerts=False), _fields(base, alerts=False)]}
        )


def _fields(spec: SloSpec, alerts: bool = True) -> dict[str, object]:
    out = {k: getattr(spec, k) for k in ("name", "metric", "target", "window", "op", "threshold")}
    if alerts:
        out["alerts"] = spec.alerts
    return out


def test_settings_declare_slos_and_name_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "RAGPULSE_SLO__OBJECTIVES",
        '[{"name": "hits", "metric": "hit_rate@5", "op": "==", "threshold": 1, "target": 0.95}]',
    )
    monkeypatch.setenv("RAGPULSE_SLO__OPENSLO_FILE", str(EXAMPLE))
    specs = load_settings().slo.specs()
    assert [s.name for s in specs] == [
        "faithfulness",
        "retrieval-hit",
        "judge-calls",
        "hits",
    ]
    assert specs[-1].window == "28d" and specs[-1].alerts == DEFAULT_ALERTS
    monkeypatch.setenv(
        "RAGPULSE_SLO__OBJECTIVES", '[{"name": "hits", "metric": "hit_rate@5", "target": 95}]'
    )
    with pytest.raises(ConfigError, match=r"target 95.0 must lie in \(0, 1\)"):
        load_settings()
