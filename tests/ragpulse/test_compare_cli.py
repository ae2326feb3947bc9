"""`ragpulse compare` as a user runs it: evaluate -> compare (files), and the store's
versions -> compare, with the release gate's exit code."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import select

from collector.store.models import JobOutcome, MetricResult
from collector.store.session import make_engine, make_session_factory
from ragpulse.cli import main
from tests.jobs.helpers import add_trace

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def _dataset(path: Path, prefix: str, first_hit: float, seed: int, n: int = 120) -> Path:
    """`n` questions (Russian and English) whose relevant document is ranked first with
    probability `first_hit` (else third); the same questions for every system."""
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(n):
        first = rng.random() < first_hit
        contexts = (
            [{"id": "rel"}, {"id": "x"}, {"id": "y"}]
            if first
            else [{"id": "x"}, {"id": "y"}, {"id": "rel"}]
        )
        question = f"Как оформить отпуск номер {i}?" if i % 2 else f"How do I reset password {i}?"
        lines.append(
            json.dumps(
                {
                    "trace_id": f"{prefix}-{i}",
                    "timestamp": "2026-11-01T12:00:00Z",
                    "question": question,
                    "contexts": contexts,
                    "relevant_ids": ["rel"],
                },
                ensure_ascii=False,
            )
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _evaluate(tmp_path: Path, name: str, first_hit: float, seed: int) -> Path:
    data = _dataset(tmp_path / f"{name}.jsonl", name, first_hit, seed)
    out = tmp_path / f"{name}.json"
    code = main(
        [
            "evaluate",
            str(data),
            "--metrics",
            "hit_rate@1,mrr,hit_rate@5",
            "--output",
            str(out),
            "--no-record",
            "--no-progress",
        ]
    )
    assert code == 0
    return out


def test_evaluate_then_compare_is_paired_and_gates_a_release(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _evaluate(tmp_path, "a", 0.8, 1)
    b = _evaluate(tmp_path, "b", 0.5, 2)
    capsys.readouterr()
    html = tmp_path / "cmp.html"
    code = main(
        [
            "compare",
            str(a),
            str(b),
            "--json",
            "--output-html",
            str(html),
            "--fail-on",
            "hit_rate@1",
            "--resamples",
            "2000",
        ]
    )
    out = capsys.readouterr()
    assert code == 1, out.err
    doc = json.loads(out.out)
    assert doc["paired"] is True and doc["pairs"] == 120
    rows = {r["metric"]: r for r in doc["metrics"]}
    assert set(rows) == {"hit_rate@1", "mrr", "hit_rate@5"}
    hit = rows["hit_rate@1"]
    for key in (
        "metric",
        "diff",
        "ci_lower",
        "ci_upper",
        "effect_size",
        "p_value",
        "p_adjusted",
        "significant",
        "paired",
        "n",
    ):
        assert key in hit
    assert hit["paired"] is True and hit["n"] == 120 and hit["significant"] is True
    assert hit["ci_lower"] < hit["diff"] < 0 and hit["verdict"] == "worse"
    assert hit["wins"] + hit["ties"] + hit["losses"] == 120
    # hit_rate@5 is 1 on both sides: no difference, and no effect size on constant scores
    assert rows["hit_rate@5"]["diff"] == 0 and rows["hit_rate@5"]["significant"] is False
    assert doc["failed_on"] == ["hit_rate@1"] and doc["correction"] == "holm"
    assert "significantly worse on hit_rate@1" in out.err
    page = html.read_text(encoding="utf-8")
    assert "ragpulse comparison" in page and 'data-verdict="worse"' in page

    # the table, and a gate on a metric that did not get worse passes
    code = main(["compare", str(a), str(b), "--fail-on", "hit_rate@5", "--resamples", "2000"])
    table = capsys.readouterr().out
    assert code == 0
    assert "paired on 120 shared questions" in table and "Holm correction" in table
    assert "win/tie/loss" in table and "worse" in table


def test_a_run_against_itself_is_not_significant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _evaluate(tmp_path, "a", 0.7, 1)
    capsys.readouterr()
    assert (
        main(["compare", str(a), str(a), "--json", "--fail-on", "all", "--correction", "bh"]) == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert all(not r["significant"] and r["diff"] == 0 for r in doc["metrics"])
    assert doc["correction"] == "bh"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["compare", "only-one.json"], "two run files"),
        (["compare", "--a", "v1"], "--b VERSION"),
        (["compare", "A", "B", "--a", "v1"], "leave them out"),
        (["compare", "missing-a.json", "missing-b.json"], "cannot read"),
    ],
)
def test_usage_errors(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert says in capsys.readouterr().err


def test_fail_on_must_name_a_compared_metric(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _evaluate(tmp_path, "a", 0.7, 1)
    capsys.readouterr()
    assert main(["compare", str(a), str(a), "--fail-on", "faithfulness"]) == 2
    assert "not among the compared metrics" in capsys.readouterr().err
    assert main(["compare", str(a), str(a), "--metric", "ndcg@10"]) == 2
    assert "cannot compare ndcg@10" in capsys.readouterr().err


def _store(url: str) -> None:
    rng = np.random.default_rng(5)
    engine = make_engine(url)
    with make_session_factory(engine)() as session:
        for version, p in (("v6", 0.75), ("v7", 0.45)):
            for i in range(60):
                ts = NOW - timedelta(hours=6, minutes=-3 * i)
                trace = f"{version}-{i}"
                hit = float(rng.random() < p)
                add_trace(session, trace, ts, question=f"{version} q{i}", tags={"version": version})
                session.add(
                    JobOutcome(
                        job="real_users_benchmark",
                        trace_id=trace,
                        trace_updated_at=ts,
                        ts=ts,
                        groups={},
                        outcomes={"hit_rate@1": hit, "mrr": hit},
                        slices={"version": version},
                    )
                )
        session.commit()
    engine.dispose()


def test_versions_in_the_store(
    sqlite_url: str, monkeypatch: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    _store(sqlite_url)
    monkeypatch.setenv("RAGPULSE_DATABASE__URL", sqlite_url)
    until = NOW.isoformat()
    code = main(
        [
            "compare",
            "--metric",
            "hit_rate@1,mrr",
            "--a",
            "v6",
            "--b",
            "v7",
            "--since",
            "24h",
            "--until",
            until,
            "--json",
            "--fail-on",
            "mrr",
        ]
    )
    out = capsys.readouterr()
    doc = json.loads(out.out)
    assert doc["paired"] is False and doc["rows_a"] == 60 and doc["rows_b"] == 60
    rows = {r["metric"]: r for r in doc["metrics"]}
    assert rows["hit_rate@1"]["diff"] < 0 and rows["hit_rate@1"]["effect_size_kind"] == "cohens_h"
    assert code == (1 if rows["mrr"]["verdict"] == "worse" else 0)
    assert (
        main(["compare", "--metric", "hit_rate@1", "--a", "v6", "--b", "v9", "--until", until]) == 2
    )
    assert "no scored traces of version v9" in capsys.readouterr().err


def _judged(url: str, now: datetime) -> None:
    """Six hours of labelled production-judge decisions: v6 right 85% of the time, v7 70%."""
    rng = np.random.default_rng(11)
    engine = make_engine(url)
    with make_session_factory(engine)() as session:
        for version, right in (("v6", 0.85), ("v7", 0.7)):
            for i in range(150):
                label = bool(rng.random() < 0.6)
                decision = label if rng.random() < right else not label
                add_trace(
                    session,
                    f"{version}-{i}",
                    now - timedelta(hours=6) + timedelta(seconds=140 * i + 1),
                    question=f"{version} q{i}",
                    tags={"version": version},
                    judge_decision=decision,
                    judge_label=label,
                    judge_latency_ms=float(200 + i % 50),
                )
        session.commit()
    engine.dispose()


def test_live_compare_and_the_report_agree_on_judge_accuracy(
    sqlite_url: str, monkeypatch: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """judge_accuracy is computed over whole windows (a confusion matrix): live compare
    said "A has no scores" while the report showed its value. Per trace it is "the
    decision was right", read from the trace: the mean is the report's value."""
    now = datetime.now(UTC).replace(microsecond=0)
    _judged(sqlite_url, now)
    monkeypatch.setenv("RAGPULSE_DATABASE__URL", sqlite_url)
    assert main(["jobs", "run", "judge_pipeline"]) == 0
    capsys.readouterr()
    engine = make_engine(sqlite_url)
    with make_session_factory(engine)() as session:
        reported = {
            (r.metric, r.group_key): r
            for r in session.scalars(select(MetricResult).where(MetricResult.window == "24h"))
        }
    engine.dispose()
    until = (now + timedelta(seconds=1)).isoformat()
    metrics = "judge_accuracy,judge_precision,judge_recall,judge_latency_ms"
    code = main(
        ["compare", "--metric", metrics, "--a", "v6", "--b", "v7", "--until", until, "--json"]
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    doc = json.loads(out.out)
    assert doc["skipped"] == []
    rows = {r["metric"]: r for r in doc["metrics"]}
    for metric in metrics.split(","):
        for side, version in (("mean_a", "v6"), ("mean_b", "v7")):
            assert rows[metric][side] == pytest.approx(
                reported[metric, f"version={version}"].value
            ), (metric, version)
    assert rows["judge_accuracy"]["n_a"] == reported["judge_accuracy", "version=v6"].n
    # the store holds six hours: the 24h window says so
    assert doc["history"] == "6h of history: the 24h window holds only that"

    # judge_f1 is no mean of per-trace scores: said precisely, with what can be compared
    code = main(["compare", "--metric", "judge_f1", "--a", "v6", "--b", "v7", "--until", until])
    err = capsys.readouterr().err
    assert code == 2
    assert "judge_f1 is computed over whole windows and is no mean of per-trace scores" in err
    assert "judge_pipeline has judge_accuracy, judge_precision, judge_recall" in err
    # explain and traces read stored per-trace outcomes: they say where judge_accuracy is
    assert main(["explain", "--metric", "judge_accuracy", "--until", until]) == 2
    err = capsys.readouterr().err
    assert "judge_accuracy is computed over whole windows and not stored per trace" in err
    assert "`ragpulse compare --a V1 --b V2 --metric judge_accuracy`" in err
