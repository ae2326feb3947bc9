"""`ragpulse evaluate` with judge metrics: judge built from RAGPULSE_JUDGE__*, counts of
skips and errors per metric, a judge usage line, the secret never printed, and a second
run answered by the judgments table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragpulse.cli import main
from tests.fixtures.llm_server import Reply, ScriptedLLM, auto_reply


def test_evaluate_with_judge_metrics(
    llm_server: ScriptedLLM,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    llm_server.fallback = auto_reply
    llm_server.script("Сломанный вопрос", Reply(status=500))
    data = tmp_path / "data.jsonl"
    records: list[dict[str, Any]] = [
        {"question": "Что такое RAG?", "reference": "Поиск и генерация."},
        {"question": "Сломанный вопрос?", "reference": "Эталон."},
        {"question": "Без эталона?"},
    ]
    with data.open("w", encoding="utf-8") as fh:
        for i, rec in enumerate(records):
            rec |= {
                "trace_id": f"t{i}",
                "timestamp": "2024-05-01T10:00:00Z",
                "answer": "Ответ.",
                "contexts": [{"id": "a", "text": "RAG — это поиск."}, {"id": "b", "text": "Иное."}],
            }
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    monkeypatch.setenv("RAGPULSE_JUDGE__MODELS", "openai/judge-a")
    monkeypatch.setenv("RAGPULSE_JUDGE__API_BASE", llm_server.base_url)
    monkeypatch.setenv("RAGPULSE_JUDGE__API_KEY", "sk-do-not-print-me")
    monkeypatch.setenv("RAGPULSE_JUDGE__MAX_RETRIES", "1")
    monkeypatch.setenv("RAGPULSE_DATABASE__URL", f"sqlite:///{tmp_path / 'r.db'}")
    out = tmp_path / "out.json"
    argv = [
        "evaluate",
        str(data),
        "--metrics",
        "context_relevance,e2e_score",
        "--output",
        str(out),
        "--no-progress",
    ]

    assert main(["migrate"]) == 0  # the judgments table is the cache across runs
    assert main(argv) == 0
    printed = capsys.readouterr()
    assert "sk-do-not-print-me" not in printed.out + printed.err
    aggregate = json.loads(out.read_text(encoding="utf-8"))["aggregate"]
    assert aggregate["context_relevance"]["n"] == 2
    assert aggregate["context_relevance"]["errors"] == 1
    assert aggregate["e2e_score"]["skipped"] == 1 and aggregate["e2e_score"]["errors"] == 1
    assert "error server_error" in printed.err and "no reference" in printed.err
    assert "judge: " in printed.err and "cache hits" in printed.err
    paid = len(llm_server.requests)

    assert main(argv) == 0
    # Successful judgments come from the table; only the failing sample is asked again.
    assert len(llm_server.requests) - paid == 2 * 2  # 2 metrics x (1 try + 1 retry)
