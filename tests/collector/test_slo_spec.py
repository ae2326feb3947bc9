"""Quality SLOs from OpenSLO YAML and from the settings: parsed, validated, one-line errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
from dashboards import slo_rules

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
    faith, hit, judge, fast, decisions, conversations = load_openslo(EXAMPLE)
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
    assert judge.kind == "success" and judge.target == pytest.approx(0.99)  # targetPercent
    assert (fast.kind, fast.metric, fast.op, fast.threshold) == (
        "latency",
        "latency_ms",
        "<=",
        2200,
    )
    assert (decisions.kind, decisions.metric, decisions.op, decisions.threshold) == (
        "agreement",
        "judge_decision_correct",
        "==",
        1.0,
    )
    # an 80% SLO: 14.4x and 6x would need error ratios above 1, only the tickets remain
    assert decisions.alerts == DEFAULT_ALERTS[2:]
    # a conversation is good when the sessions job found it resolved
    assert (conversations.metric, conversations.op, conversations.threshold) == (
        "session_resolved",
        "==",
        1.0,
    )
    assert (conversations.target, conversations.window) == (0.95, "28d")
    assert conversations.is_good(1.0) and not conversations.is_good(0.0)
    assert conversations.alerts == DEFAULT_ALERTS


def _kind_slo(good: str, total: str) -> str:
    return (
        _slo()
        .replace('metric: faithfulness, op: ">=", threshold: 0.7', good)
        .replace("{metric: faithfulness}", "{" + total + "}")
    )


@pytest.mark.parametrize(
    ("limit", "ms"), [("2s", 2000.0), ("1500ms", 1500.0), ("1m", 60_000.0), (750, 750.0)]
)
def test_a_latency_sli_takes_a_duration_or_milliseconds(limit: object, ms: float) -> None:
    [spec] = parse_openslo(_kind_slo(f"sli: latency, limit: {limit}", "sli: latency"))
    assert (spec.kind, spec.metric, spec.threshold) == ("latency", "latency_ms", ms)
    assert spec.is_good(ms) and not spec.is_good(ms + 0.1)


def test_an_agreement_sli() -> None:
    [spec] = parse_openslo(_kind_slo("sli: agreement, agrees: true", "sli: agreement"))
    assert (spec.kind, spec.metric) == ("agreement", "judge_decision_correct")
    assert spec.is_good(1.0) and not spec.is_good(0.0)


@pytest.mark.parametrize(
    ("good", "total", "error"),
    [
        (
            "sli: latency, limit: fast",
            "sli: latency",
            "slo 'faithful': limit 'fast' is not a positive duration (2s, 1500ms) or number of ms",
        ),
        ("sli: latency, limit: -5", "sli: latency", "limit -5 is not a positive duration"),
        ("sli: latency, limit: 0ms", "sli: latency", "limit '0ms' is not a positive duration"),
        ("sli: latency, limit: true", "sli: latency", "limit True is not a duration"),
        ("sli: latency", "sli: latency", "SLO 'faithful': good needs limit"),
        ("sli: latency, limit: 2s", "sli: agreement", "good and total need the same sli"),
        ("sli: speed, limit: 2s", "sli: speed", "need the same sli, one of latency, agreement"),
        ("sli: agreement", "sli: agreement", "good needs agrees: true"),
        (
            "sli: latency, limit: 2s",
            "sli: latency, metric: mrr",
            "an sli source names no metric",
        ),
    ],
)
def test_invalid_kind_slis_are_one_line_errors(good: str, total: str, error: str) -> None:
    with pytest.raises(SloSpecError) as caught:
        parse_openslo(_kind_slo(good, total))
    message = str(caught.value)
    assert error in message
    assert "\n" not in message


def test_settings_declare_latency_and_agreement_slos() -> None:
    settings = load_settings(
        slo={
            "objectives": [
                {"name": "fast", "kind": "latency", "limit": "2s", "target": 0.99},
                {"name": "fast-ms", "kind": "latency", "limit": 1500, "target": 0.99},
                {"name": "agrees", "kind": "agreement", "target": 0.8, "window": "7d"},
            ]
        }
    )
    fast, fast_ms, agrees = settings.slo.specs()
    assert (fast.metric, fast.threshold, fast_ms.threshold) == ("latency_ms", 2000.0, 1500.0)
    assert (agrees.metric, agrees.window) == ("judge_decision_correct", "7d")
    for bad, error in (
        ({"kind": "latency"}, "slo 'x': a latency SLO needs a limit (e.g. 2s or 2000 for ms)"),
        ({"kind": "latency", "limit": "2 s"}, "slo 'x': limit '2 s' is not a positive duration"),
        ({"kind": "latency", "limit": 0}, "slo 'x': limit 0.0 is not a positive duration"),
        (
            {"kind": "latency", "limit": "2s", "metric": "mrr"},
            "slo 'x': a latency SLO measures latency_ms, not 'mrr' (leave metric out)",
        ),
        ({"kind": "agreement", "limit": "2s"}, "slo 'x': an agreement SLO takes no limit"),
    ):
        with pytest.raises(ConfigError) as caught:
            load_settings(slo={"objectives": [{"name": "x", "target": 0.9, **bad}]})
        assert error in str(caught.value)


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


def _with_policy(severity: str) -> str:
    policy = (
        "  alertPolicies:\n    - kind: AlertPolicy\n      metadata: {name: p}\n"
        "      spec:\n        conditions:\n          - kind: AlertCondition\n"
        "            metadata: {name: c}\n            spec:\n"
        f"              severity: {severity}\n"
        "              condition: {kind: burnrate, op: gte, threshold: 6, lookbackWindow: 6h}\n"
    )
    return _slo() + policy


@pytest.mark.parametrize(
    ("word", "kept"), [("page", "page"), ("ticket", "ticket"), ("critical", "page"),
                       ("warning", "ticket"), ("Critical", "page")],
)  # fmt: skip
def test_an_alert_severity_is_the_slos_word_and_its_label_is_the_pair(word: str, kept: str) -> None:
    (spec,) = parse_openslo(_with_policy(word))
    assert [a.severity for a in spec.alerts] == [kept]
    (rule,) = [r for r in slo_rules.alert_rules(spec) if "alert" in r]
    assert rule["labels"]["severity"] == {"page": "critical", "ticket": "warning"}[kept]
    assert (rule["labels"]["metric"], rule["labels"]["tier"]) == ("faithfulness", "generation")


@pytest.mark.parametrize("word", ["high", "sev1", "pager", "''"])
def test_an_unknown_alert_severity_is_refused_naming_the_accepted_ones(word: str) -> None:
    with pytest.raises(SloSpecError) as caught:
        parse_openslo(_with_policy(word))
    message = str(caught.value)
    assert "is not one ragpulse routes: use page (= critical" in message
    assert "ticket (= warning" in message and "\n" not in message
    base = SloSpec(name="x", metric="mrr", target=0.95, window="28d")
    with pytest.raises(SloSpecError, match="slo 'x': severity 'high' is not one ragpulse routes"):
        validate(SloSpec(**{**_fields(base), "alerts": (BurnAlert("high", 6, "6h", "30m"),)}))  # type: ignore[arg-type]


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


def _fields(spec: SloSpec, alerts: bool = True) -> dict[str, Any]:
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
        "fast-answers",
        "judge-decisions",
        "conversations-resolved",
        "hits",
    ]
    assert specs[-1].window == "28d" and specs[-1].alerts == DEFAULT_ALERTS
    monkeypatch.setenv(
        "RAGPULSE_SLO__OBJECTIVES", '[{"name": "hits", "metric": "hit_rate@5", "target": 95}]'
    )
    with pytest.raises(ConfigError, match=r"target 95.0 must lie in \(0, 1\)"):
        load_settings()
