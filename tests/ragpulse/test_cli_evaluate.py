"""`ragpulse evaluate` end to end, as a user runs it (subprocess), on a small JSONL dataset
with Russian and English records, recording runs in a real SQLite database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
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
        [sys.executable, "-m", "ragpulse.cli", *args],
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
    assert "emb:use-multilingual-v3" in doc["aggregate"]["semantic_similarity"]["signature"]
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
    assert "emb:use-multilingual-v3" in run.signature


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


# --- real files: poison lines, --skip-invalid, names, progress bars ---------------------


def _deep(depth: int) -> str:
    record = dict(RECORDS[2], trace_id="deep")
    return json.dumps(record)[:-1] + ', "metadata": ' + '{"a":' * depth + "1" + "}" * depth + "}"


POISON = {
    "nested 10,000 deep": _deep(10_000),
    "timestamp before year 1 in UTC": json.dumps(
        dict(RECORDS[2], trace_id="early", timestamp="0001-01-01T00:00:00+01:00")
    ),
    "timestamp after 9999 in UTC": json.dumps(
        dict(RECORDS[2], trace_id="late", timestamp="9999-12-31T23:30:00-01:00")
    ),
    "line over the size limit": json.dumps(dict(RECORDS[2], trace_id="big", answer="x" * 5000)),
}


@pytest.mark.parametrize("poison", list(POISON.values()), ids=list(POISON))
def test_a_poison_line_is_a_one_line_error(tmp_path: Path, poison: str) -> None:
    lines = [json.dumps(RECORDS[0], ensure_ascii=False), poison]
    path = _write(tmp_path / "poison.jsonl", lines)
    proc = _ragpulse(
        tmp_path, "evaluate", str(path), "--metrics", "mrr", "--max-line-bytes", "4000"
    )
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"ragpulse evaluate: {path}:2: ")
    assert "--skip-invalid" in line and "Traceback" not in proc.stderr


def test_an_oversized_line_is_not_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as fh:
        fh.write(json.dumps(RECORDS[0], ensure_ascii=False).encode() + b"\n")
        fh.write(b'{"trace_id": "huge", "question": "' + b"x" * (150 * 1024 * 1024) + b'"}\n')
        fh.write(json.dumps(RECORDS[2]).encode() + b"\n")
    # VmHWM is this process's peak resident memory (getrusage's maxrss would count the
    # parent's too, carried across fork and exec).
    probe = (
        "import runpy, sys\n"
        "sys.argv = ['ragpulse', *sys.argv[1:]]\n"
        "try:\n"
        "    runpy.run_module('ragpulse.cli', run_name='__main__')\n"
        "finally:\n"
        "    status = open('/proc/self/status').read()\n"
        "    kb = status.split('VmHWM:')[1].split()[0]\n"
        "    print(f'peak_kb={kb}', file=sys.stderr)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPULSE_")}
    limit = ["--max-line-bytes", "1000000", "--skip-invalid", "--no-progress"]
    proc = subprocess.run(
        [sys.executable, "-c", probe, "evaluate", str(path), "--metrics", "mrr", *limit],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(Path(__file__).parents[2])},
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"skipped {path}:2: oversized" in proc.stderr
    assert "mrr " in proc.stdout
    max_rss_mb = int(proc.stderr.rsplit("peak_kb=", 1)[1].split()[0]) / 1024
    assert max_rss_mb < 140, max_rss_mb  # the 150 MB line was never held in memory


def test_skip_invalid_reports_the_bad_lines_and_evaluates_the_rest(tmp_path: Path) -> None:
    lines = [json.dumps(r, ensure_ascii=False) for r in RECORDS]
    lines.insert(1, '{"trace_id": "x", "question": "нет времени"}')  # line 2
    lines.insert(3, "{not json")  # line 4
    lines.append(POISON["nested 10,000 deep"])  # line 6
    lines.append(POISON["timestamp after 9999 in UTC"])  # line 7
    path = _write(tmp_path / "mixed.jsonl", lines)
    out = tmp_path / "out.json"
    proc = _ragpulse(
        tmp_path,
        "evaluate",
        str(path),
        "--metrics",
        "mrr",
        "--skip-invalid",
        "--no-progress",
        "--output",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    for number, reason in ((2, "missing_field"), (4, "invalid_json"), (6, "too_deep")):
        assert f"skipped {path}:{number}: {reason}" in proc.stderr
    assert f"skipped {path}:7: invalid_value" in proc.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert [(b["line"], b["reason"]) for b in doc["invalid_lines"]] == [
        (2, "missing_field"),
        (4, "invalid_json"),
        (6, "too_deep"),
        (7, "invalid_value"),
    ]
    assert all(b["detail"] and "\n" not in b["detail"] for b in doc["invalid_lines"])
    assert doc["aggregate"]["mrr"]["n"] == 3
    assert [row["trace_id"] for row in doc["samples"]] == ["r1", "r2", "r3"]

    # Without the flag the same file stops with every bad line named.
    proc = _ragpulse(tmp_path, "evaluate", str(path), "--metrics", "mrr")
    assert proc.returncode == 2
    assert "4 invalid lines" in proc.stderr and f"{path}:7: invalid_value" in proc.stderr
    assert "outside years 1..9999" in proc.stderr

    # Nothing valid left: an error that still names the bad lines.
    bad_only = _write(tmp_path / "bad.jsonl", [lines[1], lines[3]])
    proc = _ragpulse(tmp_path, "evaluate", str(bad_only), "--metrics", "mrr", "--skip-invalid")
    assert proc.returncode == 2
    assert "holds no valid line" in proc.stderr and f"{bad_only}:2: invalid_json" in proc.stderr


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("ndgc@10", "ndcg@10"), ("hitrate@5", "hit_rate@5"), ("faithfullness", "faithfulness")],
)
def test_unknown_metric_did_you_mean(tmp_path: Path, typed: str, meant: str) -> None:
    proc = _ragpulse(tmp_path, "evaluate", str(_dataset(tmp_path)), "--metrics", f"mrr,{typed}")
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert f"unknown metric {typed!r}; did you mean {meant!r}?" in line


@pytest.mark.parametrize("name", ["judge_consistency", "judge_error_rate", "judge_latency_ms_avg"])
def test_job_only_metrics_are_named_as_such(tmp_path: Path, name: str) -> None:
    proc = _ragpulse(tmp_path, "evaluate", str(_dataset(tmp_path)), "--metrics", name)
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert f"{name} is computed only by the scheduled job 'judge_consistency'" in line
    assert "ragpulse jobs run judge_consistency" in line


def test_no_progress_silences_every_bar(tmp_path: Path) -> None:
    args = ("evaluate", str(_dataset(tmp_path)), "--metrics", "semantic_similarity,mrr")
    shown = _ragpulse(tmp_path, *args, "--no-record")
    assert shown.returncode == 0, shown.stderr
    assert "sample/s" in shown.stderr  # bars are drawn without the flag
    quiet = _ragpulse(tmp_path, *args, "--no-record", "--no-progress")
    assert quiet.returncode == 0, quiet.stderr
    for mark in ("\r", "it/s", "sample/s", "%|"):
        assert mark not in quiet.stderr, quiet.stderr
