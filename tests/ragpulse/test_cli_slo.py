"""`ragpulse slo check|rules`: a user's SLOs validated, and their rules, tests and dashboard
written (the same as the shipped ones for the example file)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

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
    assert "fast-answers: good = latency_ms <= 2200 (every trace); 0.95 over 28d" in out
    assert (
        "judge-decisions: good = the production judge's decision agrees with judge_label "
        "(labelled traces); 0.8 over 28d; ticket 3x/1d+2h, ticket 1x/3d+6h"
    ) in out
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
    assert [s.name for s in demo.slo.specs()] == [
        "faithfulness",
        "retrieval-hit",
        "judge-calls",
        "fast-answers",
        "judge-decisions",
        "conversations-resolved",
    ]
    own = load_settings(slo={"objectives": [{"name": "m", "metric": "mrr", "target": 0.9}]})
    assert [s.name for s in demo_settings(own, "sqlite:///d.db", "127.0.0.1:1").slo.specs()] == [
        "m"
    ]


def _labelled_store(db_url: str, now: Any) -> tuple[list[float], list[float]]:
    """Faithfulness scores (rag_quality's stored outcomes) and binary human verdicts of 40
    recent traces, a few old ones outside a 7d look-back; returns the recent pairs."""
    import numpy as np

    from collector.store.models import HumanLabel, JobOutcome
    from collector.store.session import make_engine, make_session_factory

    rng = np.random.default_rng(7)
    judge, human = [], []
    engine = make_engine(db_url)
    with make_session_factory(engine)() as session:
        for i in range(46):
            ts = now - timedelta(hours=1 + i) if i < 40 else now - timedelta(days=9)
            truth = float(rng.random())
            score = float(np.clip(truth + rng.normal(0, 0.15), 0, 1))
            verdict = float(truth >= 0.6)
            outcomes: dict[str, Any] = {"faithfulness": score}
            if i == 3:
                outcomes = {"faithfulness": {"error": "Timeout"}}  # not scored: no pair
            session.add(
                JobOutcome(
                    job="rag_quality",
                    trace_id=f"t{i}",
                    trace_updated_at=ts,
                    ts=ts,
                    groups=None,
                    outcomes=outcomes,
                )
            )
            labelers = ("a", "b") if i == 0 else ("a",)
            for labeler in labelers:  # t0: two labelers, 1 and 0 -> 0.5, bad at 0.7
                value = float(labeler == "a") if i == 0 else verdict
                session.add(
                    HumanLabel(
                        trace_id=f"t{i}",
                        metric="faithfulness",
                        labeler=labeler,
                        value=value,
                        timestamp=ts,
                    )
                )
            if i < 40 and i != 3:
                judge.append(score)
                human.append(0.5 if i == 0 else verdict)
        session.commit()
    engine.dispose()
    return judge, human


def test_trust_compares_each_slo_with_the_stored_labels(
    db_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import json
    from datetime import UTC, datetime

    from sklearn.metrics import cohen_kappa_score, recall_score

    judge, human = _labelled_store(db_url, datetime.now(UTC))
    monkeypatch.setenv("RAGPULSE_DATABASE__URL", db_url)
    monkeypatch.setenv(
        "RAGPULSE_SLO__OBJECTIVES",
        '[{"name": "faithful", "metric": "faithfulness", "threshold": 0.7, "target": 0.9},'
        ' {"name": "fast", "kind": "latency", "limit": "2s", "target": 0.9}]',
    )
    assert main(["slo", "trust", "--since", "7d", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    bad_j = [int(v < 0.7) for v in judge]
    bad_h = [int(v < 0.7) for v in human]
    faithful = found["faithful"]
    assert (faithful["metric"], faithful["n"]) == ("faithfulness", 39)
    stats = faithful["stats"]
    assert stats["cohen_kappa"]["value"] == pytest.approx(cohen_kappa_score(bad_h, bad_j))
    assert stats["sensitivity"]["value"] == pytest.approx(recall_score(bad_h, bad_j))
    assert stats["specificity"]["value"] == pytest.approx(recall_score(bad_h, bad_j, pos_label=0))
    assert stats["sensitivity"]["n"] == sum(bad_h)
    lo, hi = stats["cohen_kappa"]["ci_lower"], stats["cohen_kappa"]["ci_upper"]
    assert lo < stats["cohen_kappa"]["value"] < hi
    assert faithful["bad_share_human"] == pytest.approx(sum(bad_h) / 39)
    assert found["fast"] == {
        "metric": "latency_ms",
        "undefined": "a latency is measured, not judged: no human labels to compare",
    }
    # the table; the default look-back is the SLO's window (28d): the old traces count too
    assert main(["slo", "trust"]) == 0
    out = capsys.readouterr().out
    assert "SLO classification against human labels (positive = bad" in out
    assert any(
        line.split()[:3] == ["faithful", "faithfulness", "cohen_kappa"] and line.split()[-1] == "45"
        for line in out.splitlines()
    ), out
    assert main(["slo", "trust", "--since", "a week"]) == 2
    assert "--since: 'a week' is not a duration" in capsys.readouterr().out
