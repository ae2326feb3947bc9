"""The labelled conversations the benchmark reads are well formed and cover what they claim."""

from __future__ import annotations

import json
from pathlib import Path

from evaluators.scripts import dominant_script

DATA = Path(__file__).parents[3] / "benchmarks" / "data" / "conversations_ru_en.jsonl"


def test_the_labelled_set() -> None:
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]
    assert len(rows) >= 120
    assert len({r["id"] for r in rows}) == len(rows)
    assert {r["split"] for r in rows} == {"dev", "test", "fresh"}
    scripts: set[str | None] = set()
    re_asks = escalations = 0
    for r in rows:
        turns = r["turns"]
        assert turns
        for j, turn in enumerate(turns):
            assert turn["q"].strip()
            assert all(0 <= i < j for i in turn["re_ask_of"])
            # a later turn re-asking two earlier ones means those two are one question too
            for i in turn["re_ask_of"]:
                assert set(turns[i]["re_ask_of"]) <= set(turn["re_ask_of"])
            scripts.add(dominant_script(turn["q"]))
            re_asks += bool(turn["re_ask_of"])
            escalations += turn["escalation"]
    assert {"Cyrillic", "Latin"} <= scripts
    assert re_asks >= 50 and escalations >= 35
