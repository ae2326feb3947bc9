"""`ragpulse evaluate --output-html`: the offline page in a real headless Chromium — every
metric drawn with its value, interval and groups, coloured by the dashboards' thresholds."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from exporters.report.dashboards import css_color
from exporters.report.offline import shipped_thresholds
from ragpulse.cli import main
from ragpulse.demo.traffic import write_jsonl

METRICS = ["hit_rate@1", "mrr", "judge_accuracy", "rougeL_f"]


def test_evaluate_writes_an_html_page_with_every_metric_and_group(
    tmp_path: Path, chromium: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no ragpulse.db here: nothing is recorded
    dataset = tmp_path / "traces.jsonl"
    write_jsonl(dataset, rounds=1, feedback=False, now=datetime(2026, 11, 20, tzinfo=UTC))
    html, doc = tmp_path / "eval.html", tmp_path / "eval.json"
    code = main(
        [
            "evaluate",
            str(dataset),
            "--metrics",
            ",".join(METRICS),
            "--group-by",
            "tenant",
            "--output",
            str(doc),
            "--output-html",
            str(html),
            "--no-progress",
            "--no-record",
        ]
    )
    assert code == 0
    document = json.loads(doc.read_text())
    page = chromium.open(html.as_uri())
    shot = page.screenshot(tmp_path / "eval.png")
    if os.environ.get("REPORT_SCREENSHOTS_DIR"):
        shutil.copy(shot, Path(os.environ["REPORT_SCREENSHOTS_DIR"]) / "evaluate.png")
    assert page.console_errors == []
    assert page.evaluate("document.documentElement.dataset.panelsWithData") == str(len(METRICS) + 1)
    panels = page.evaluate(
        "Array.from(document.querySelectorAll('.panel')).slice(1).map(p => ({"
        " title: p.querySelector('h4').textContent,"
        " labels: Array.from(p.querySelectorAll('svg text')).map(t => t.textContent),"
        " dots: Array.from(p.querySelectorAll('circle.estimate')).map(c => c.getAttribute('fill'))"
        "}))"
    )
    assert [p["title"] for p in panels] == METRICS
    thresholds = shipped_thresholds()
    assert "hit_rate@1" in thresholds and "judge_accuracy" in thresholds
    for panel in panels:
        name = panel["title"]
        agg = document["aggregate"][name]
        groups = {g: m[name] for g, m in document["groups"].items()}
        assert set(groups) == {"bank", "shop", "hr"}
        assert f"{agg['value']:.4f}  n={agg['n']}" in panel["labels"]
        for group, g in groups.items():
            assert f"tenant = {group}" in panel["labels"]
            assert f"{g['value']:.4f}  n={g['n']}" in panel["labels"]
        assert len(panel["dots"]) == 4
        if name in thresholds:  # the dashboards' colour for the overall value
            expected = None
            for step, color in thresholds[name]:
                if step is None or agg["value"] >= step:
                    expected = css_color(color)
            assert panel["dots"][0] == expected


def test_the_page_names_the_lines_skip_invalid_left_out() -> None:
    from exporters.report.offline import render_evaluation

    document = {
        "aggregate": {"mrr": {"value": 1.0, "n": 1, "ci_lower": 1.0, "ci_upper": 1.0}},
        "samples": [{"trace_id": "a", "mrr": 1.0}],
        "invalid_lines": [
            {"line": 2, "reason": "missing_field", "detail": "timestamp: required field"},
            {"line": 5, "reason": "invalid_json", "detail": "JSON nested too deeply"},
        ],
    }
    html = render_evaluation(document, dataset="data.jsonl")
    assert "2 invalid lines left out: 2 (missing_field), 5 (invalid_json)" in html
