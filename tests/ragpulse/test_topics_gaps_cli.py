"""`ragpulse topics gaps` and the emerging flag and metrics of `ragpulse topics --json`,
through the real CLI on SQLite and PostgreSQL, over planted topics: a topic whose
retrieval fails comes first in the gap list, a new intent at 3% of the day is emerging."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from collector.store.session import make_engine
from tests.fixtures.cli import ragpulse_in_process as ragpulse
from tests.jobs.test_topic_queries import STEADY, steady_and_new
from tests.jobs.topic_plant import plant


@pytest.mark.slow
def test_gaps_and_emerging_through_the_cli(db_url: str, tmp_path: Path) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    engine = make_engine(db_url)
    try:
        with Session(engine) as session:
            plant(session, now, steady_and_new())
    finally:
        engine.dispose()
    env = {"RAGPULSE_DATABASE__URL": db_url, "RAGPULSE_TOPICS__EMERGING_MIN_TRACES": "10"}

    done = ragpulse("topics", "gaps", "--since", "7d", "--json", "--limit", "3",
                    cwd=tmp_path, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    ranked = document["topics"]
    assert [t["id"] for t in ranked[:2]] == [0, 2] and len(ranked) == 3
    first = ranked[0]
    assert first["rank"] == 1 and first["label"] == "card, delivery"
    assert first["volume"] == 7 * STEADY
    failure = first["failure"]
    assert failure["ci_lower"] < failure["rate"] < failure["ci_upper"]
    assert failure["score"] == failure["ci_lower"] * first["volume"]
    empty = first["metrics"]["retrieval_empty_rate"]
    assert empty["n"] == 7 * STEADY and empty["direction"] == "lower"
    assert first["examples"][0].startswith("card delivery")

    text = ragpulse("topics", "gaps", "--limit", "2", cwd=tmp_path, env=env)
    assert text.returncode == 0, text.stderr
    assert "  1. topic 0: card, delivery" in text.stdout
    assert "  2. topic 2: exchange, rate" in text.stdout and "3. topic" not in text.stdout
    assert "hit@5:" in text.stdout and "- card delivery" in text.stdout

    listed = json.loads(ragpulse("topics", "--since", "1d", "--json", cwd=tmp_path, env=env).stdout)
    by_id = {t["id"]: t for t in listed["topics"]}
    assert [i for i, t in by_id.items() if t["emerging"]] == [9]
    assert by_id[9]["emergence"]["new"] is True and by_id[9]["change"] > 0.02
    assert by_id[9]["metrics"]["no_answer_rate"]["value"] > 0.5
    assert by_id[0]["failure"]["measured"] == STEADY
    plain = ragpulse("topics", "--since", "1d", cwd=tmp_path, env=env)
    assert "crypto, wallet  EMERGING" in plain.stdout and "emerging: 1 topics" in plain.stdout
    shown = ragpulse("topics", "show", "9", cwd=tmp_path, env=env)
    assert "EMERGING (new topic)" in shown.stdout and "no_answer_rate:" in shown.stdout
    bad = ragpulse("topics", "gaps", "--limit", "0", cwd=tmp_path, env=env)
    assert bad.returncode == 2 and "--limit" in bad.stderr
