"""Every panel of the shipped dashboards says why it can be empty, and the conditional ones
name their condition (no judge, no ground truth, no canary, no history, ...)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dashboards import conditions

BOARDS = Path(__file__).resolve().parents[2] / "dashboards" / "grafana" / "dashboards"


def _panels() -> list[tuple[str, dict[str, object]]]:
    return [
        (f"{path.name}: {panel['title']}", panel)
        for path in sorted(BOARDS.glob("*.json"))
        for panel in json.loads(path.read_text())["panels"]
        if panel["type"] != "row"
    ]


def test_every_panel_says_why_it_can_be_empty() -> None:
    known = {c.text for c in vars(conditions).values() if isinstance(c, conditions.Condition)}
    for where, panel in _panels():
        text = panel["fieldConfig"]["defaults"].get("noValue")  # type: ignore[index]
        assert text in known, where
        found = next(c for c in vars(conditions).values() if getattr(c, "text", None) == text)
        assert f"Empty when: {found.short or text}." in str(panel["description"]), where


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("faithfulness: 1h with 95% CI against 7d", conditions.JUDGE),
        ("hit_rate@1: 1h with 95% CI against 7d", conditions.GROUND_TRUTH),
        ("judge_accuracy: 1h with 95% CI against 7d", conditions.JUDGE_LABELS),
        ("rouge1_f: 1h with 95% CI against 7d", conditions.REFERENCES),
        ("latency_ms: p50, p95, p99 (1h) against 7d", conditions.PERCENTILES),
        ("Canary: candidate − baseline per guarded metric", conditions.CANARY),
        ("Drift detectors (1 = alarm)", conditions.HISTORY),
        ("Firing alerts", conditions.NOTHING_FIRING),
        ("Where the change is (top slice)", conditions.NOT_WORSE),
    ],
)
def test_conditional_panels_name_their_condition(
    title: str, expected: conditions.Condition
) -> None:
    found = [p for where, p in _panels() if p["title"] == title]
    assert found, title
    assert found[0]["fieldConfig"]["defaults"]["noValue"] == expected.text  # type: ignore[index]


def test_the_overview_opens_with_the_status_row() -> None:
    board = json.loads((BOARDS / "overview.json").read_text())
    first_row = board["panels"][0]
    assert first_row["type"] == "row" and first_row["title"].startswith("Status")
    titles = [p["title"] for p in board["panels"][1:6]]
    assert titles == [
        "Paging",
        "Tickets",
        "Drifting series",
        "Firing alerts",
        "Where the change is (top slice)",
    ]
