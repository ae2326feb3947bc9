"""`ragpulse evaluate` over a dataset with human `labels`: judge agreement and corrected
means in the JSON and the terminal, against scikit-learn and hand-computed PPI, with two
judge models served over real HTTP by the local scripted LLM server."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import norm, spearmanr
from sklearn.metrics import cohen_kappa_score, recall_score

from ragpulse.cli import main
from tests.fixtures.llm_server import Reply, ScriptedLLM, prompt_text

N = 40
N_LABELLED = 30
_MARK = re.compile(r"marker-(\d\d)\?")
_TASK = re.compile(r"ragpulse judge task: ([a-z0-9_]+)")

rng = np.random.default_rng(4)
HUMAN_E2E = rng.choice([0.0, 0.5, 1.0], size=N)
# Model a is lenient (half a point too high on two traces in three); model b is exact.
JUDGE_A_E2E = np.where(np.arange(N) % 3 != 0, np.minimum(1.0, HUMAN_E2E + 0.5), HUMAN_E2E)
HUMAN_GRADE = rng.integers(0, 3, size=N).astype(float)
JUDGE_GRADE = np.where(np.arange(N) % 4 == 0, np.minimum(2.0, HUMAN_GRADE + 1), HUMAN_GRADE)


def _reply(body: dict[str, Any]) -> Reply:
    text = prompt_text(body)
    found = _MARK.search(text)
    task = _TASK.search(text)
    if found is None or task is None:
        return Reply(status=400, content="no marker or task")
    i = int(found.group(1))
    if task.group(1) == "e2e_score":
        exact = str(body.get("model", "")).endswith("judge-b")
        score = HUMAN_E2E[i] if exact else JUDGE_A_E2E[i]
        return Reply(content={"score": float(score), "reason": "scripted"})
    if task.group(1) == "context_relevance":
        return Reply(content={"ratings": [{"context": 1, "score": int(JUDGE_GRADE[i])}]})
    return Reply(status=400, content=f"unexpected task {task.group(1)}")


def _records(with_labels: bool) -> list[dict[str, Any]]:
    out = []
    for i in range(N):
        rec: dict[str, Any] = {
            "trace_id": f"t{i:02d}",
            "timestamp": "2024-05-01T10:00:00Z",
            "question": f"Вопрос marker-{i:02d}? Как оформить отпуск?",
            "answer": "Через HR-портал.",
            "reference": "Отпуск оформляется в HR-портале.",
            "contexts": [{"id": "hr", "text": "Отпуск оформляется в HR-портале."}],
        }
        if with_labels and i < N_LABELLED:
            rec["labels"] = {"e2e_score": HUMAN_E2E[i], "context_relevance": int(HUMAN_GRADE[i])}
            rec["labeler"] = "anna"
        out.append(rec)
    if with_labels:
        # A label off the scale and one of an unknown metric: warnings, the trace stays.
        out[N_LABELLED]["labels"] = {"e2e_score": 7, "no_such_metric": 1}
    return out


def _run(tmp_path: Path, name: str, records: list[dict[str, Any]]) -> tuple[dict[str, Any], str]:
    data = tmp_path / f"{name}.jsonl"
    data.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
    )
    out = tmp_path / f"{name}.json"
    argv = ["evaluate", str(data), "--metrics", "e2e_score,context_relevance", "--no-progress"]
    html = tmp_path / f"{name}.html"
    assert main([*argv, "--output", str(out), "--output-html", str(html)]) == 0
    assert "e2e_score" in html.read_text(encoding="utf-8")
    return json.loads(out.read_text(encoding="utf-8")), str(out)


@pytest.fixture
def judged(llm_server: ScriptedLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ScriptedLLM:
    llm_server.fallback = _reply
    monkeypatch.setenv("RAGPULSE_JUDGE__MODELS", "openai/judge-a,openai/judge-b")
    monkeypatch.setenv("RAGPULSE_JUDGE__API_BASE", llm_server.base_url)
    monkeypatch.setenv("RAGPULSE_JUDGE__API_KEY", "sk-test")
    monkeypatch.setenv("RAGPULSE_DATABASE__URL", f"sqlite:///{tmp_path / 'absent.db'}")
    return llm_server


def _ppi(judge_all: np.ndarray, judge_lab: np.ndarray, human: np.ndarray) -> tuple[float, ...]:
    rect = human - judge_lab
    value = judge_all.mean() + rect.mean()
    se = np.sqrt(judge_all.var(ddof=1) / judge_all.size + rect.var(ddof=1) / rect.size)
    z = norm.ppf(0.975)
    return value, max(0.0, value - z * se), min(1.0, value + z * se)


def test_labels_give_agreement_and_corrected_means(
    judged: ScriptedLLM,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a quality SLO on e2e_score: its classification at 0.75 is compared with the labels'
    monkeypatch.setenv(
        "RAGPULSE_SLO__OBJECTIVES",
        '[{"name": "e2e-good", "metric": "e2e_score", "threshold": 0.75, "target": 0.9}]',
    )
    doc, _ = _run(tmp_path, "labelled", _records(with_labels=True))
    printed = capsys.readouterr().out
    lab = slice(0, N_LABELLED)

    # e2e_score: the metric is the mean of the two models; continuous scale.
    judge_mean = (JUDGE_A_E2E + HUMAN_E2E) / 2
    e2e = doc["judge_agreement"]["e2e_score"]
    assert (e2e["scale"], e2e["n"]) == ("continuous", N_LABELLED)
    assert e2e["stats"]["mae"]["value"] == pytest.approx(
        np.abs(judge_mean[lab] - HUMAN_E2E[lab]).mean()
    )
    assert e2e["stats"]["spearman"]["value"] == pytest.approx(
        spearmanr(judge_mean[lab], HUMAN_E2E[lab]).statistic
    )
    for stat in e2e["stats"].values():
        assert stat["ci_lower"] <= stat["value"] <= stat["ci_upper"] and stat["n"] == N_LABELLED
    assert e2e["by_model"]["openai/judge-b"]["mae"]["value"] == 0.0
    assert e2e["by_model"]["openai/judge-a"]["mae"]["value"] == pytest.approx(
        np.abs(JUDGE_A_E2E[lab] - HUMAN_E2E[lab]).mean()
    )

    aggregate = doc["aggregate"]["e2e_score"]
    assert aggregate["value"] == pytest.approx(judge_mean.mean())  # raw, biased upwards
    value, lo, hi = _ppi(judge_mean, judge_mean[lab], HUMAN_E2E[lab])
    assert aggregate["corrected"] == {
        "value": pytest.approx(value),
        "ci_lower": pytest.approx(lo),
        "ci_upper": pytest.approx(hi),
        "n_labelled": N_LABELLED,
    }
    assert aggregate["corrected"]["value"] < aggregate["value"]

    # context_relevance: 0-2 grades, ordinal; the metric value is grade / 2.
    cr = doc["judge_agreement"]["context_relevance"]
    assert cr["scale"] == "ordinal"
    assert cr["stats"]["weighted_kappa"]["value"] == pytest.approx(
        cohen_kappa_score(JUDGE_GRADE[lab], HUMAN_GRADE[lab], weights="quadratic")
    )
    assert cr["stats"]["mae"]["value"] == pytest.approx(
        np.abs(JUDGE_GRADE[lab] - HUMAN_GRADE[lab]).mean()
    )
    value, lo, hi = _ppi(JUDGE_GRADE / 2, JUDGE_GRADE[lab] / 2, HUMAN_GRADE[lab] / 2)
    assert doc["aggregate"]["context_relevance"]["corrected"]["value"] == pytest.approx(value)
    assert doc["aggregate"]["context_relevance"]["corrected"]["ci_upper"] == pytest.approx(hi)

    # The SLO's good/bad classification (judge mean >= 0.75) against the labels' (positive
    # = bad), as scikit-learn computes it
    bad_j = (judge_mean[lab] < 0.75).astype(int)
    bad_h = (HUMAN_E2E[lab] < 0.75).astype(int)
    slo = doc["slo_agreement"]["e2e-good"]
    assert (slo["metric"], slo["n"]) == ("e2e_score", N_LABELLED)
    assert slo["stats"]["cohen_kappa"]["value"] == pytest.approx(cohen_kappa_score(bad_h, bad_j))
    assert slo["stats"]["sensitivity"]["value"] == pytest.approx(recall_score(bad_h, bad_j))
    assert slo["stats"]["specificity"]["value"] == pytest.approx(
        recall_score(bad_h, bad_j, pos_label=0)
    )
    assert slo["bad_share_sli"] == pytest.approx(bad_j.mean())
    assert slo["bad_share_human"] == pytest.approx(bad_h.mean())
    assert "SLO classification against human labels" in printed
    assert re.search(r"e2e-good\s+e2e_score\s+cohen_kappa\s+-?\d\.\d{4}", printed)

    # The bad labels cost nothing but themselves.
    assert doc["aggregate"]["e2e_score"]["n"] == N

    assert "judge agreement with human labels" in printed
    assert re.search(r"e2e_score\s+openai/judge-b\s+mae\s+0\.0000", printed)
    assert re.search(r"context_relevance\s+all\s+corrected mean\s+\d\.\d{4}", printed)


def test_no_labels_no_agreement(
    judged: ScriptedLLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc, _ = _run(tmp_path, "plain", _records(with_labels=False))
    assert "judge_agreement" not in doc and "slo_agreement" not in doc
    assert "corrected" not in doc["aggregate"]["e2e_score"]
    assert "judge agreement" not in capsys.readouterr().out
