"""`ragpulse slo check|rules`: a user's SLOs validated, and their rules, tests and dashboard
written (the same as the shipped ones for the example file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dashboards import build
from dashboards.boards import SLO_EXAMPLE
from ragpulse.cli import main


def test_rules_for_the_example_are_the_shipped_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["slo", "rules", "--openslo", str(SLO_EXAMPLE), "--output", str(tmp_path)]) == 0
    shipped = build.generated()
    for name in ("slo-faithfulness.yml", "slo-judge-calls.yml"):
        assert (tmp_path / "rules" / name).read_text() == shipped[build.SLO_RULES / name]
    test = "slo-retrieval-hit_ticket_test.yml"
    assert (tmp_path / "tests" / test).read_text() == shipped[build.SLO_TESTS / test]
    board = build.OUT / "slo.json"
    assert (tmp_path / "slo.json").read_text() == shipped[board]
    assert str(tmp_path / "slo.json") in capsys.readouterr().out


def test_check_prints_each_slo_and_refuses_a_bad_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGPULSE_SLO__OPENSLO_FILE", str(SLO_EXAMPLE))
    assert main(["slo", "check"]) == 0
    out = capsys.readouterr().out
    assert "faithfulness: good = faithfulness >= 0.7; 0.95 over 28d; page 14.4x/1h+5m" in out
    assert "judge-calls: good = faithfulness evaluated; 0.99 over 28d" in out
    bad = tmp_path / "bad.yaml"
    bad.write_text(SLO_EXAMPLE.read_text().replace("target: 0.95", "target: 95"))
    assert main(["slo", "check", "--openslo", str(bad)]) == 2
    assert capsys.readouterr().out.strip() == (
        "ragpulse slo: slo 'faithfulness': target 95.0 must lie in (0, 1)"
    )


def test_the_demo_records_the_example_slos_unless_some_are_configured() -> None:
    from collector.settings import load_settings
    from ragpulse.commands.demo import demo_settings

    demo = demo_settings(load_settings(), "sqlite:///demo.db", "127.0.0.1:1")
    assert [s.name for s in demo.slo.specs()] == ["faithfulness", "retrieval-hit", "judge-calls"]
    own = load_settings(slo={"objectives": [{"name": "m", "metric": "mrr", "target": 0.9}]})
    assert [s.name for s in demo_settings(own, "sqlite:///d.db", "127.0.0.1:1").slo.specs()] == [
        "m"
    ]
