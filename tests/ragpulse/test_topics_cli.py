"""`ragpulse topics`, `topics show ID` and `topics export` through the real CLI, on SQLite and
PostgreSQL, after the topics job found the planted clusters' topics."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import select

from collector.store.models import TraceTopic
from collector.store.session import make_engine, make_session_factory
from collector.store.topics import load_topics
from tests.fixtures.cli import ragpulse_in_process as ragpulse
from tests.jobs.test_topics_job import PHRASES, _job, _plant

TOPIC_KEYS = {
    *("id", "label", "name", "keywords", "volume", "share", "size", "first_seen", "last_seen"),
    *("emerging", "change", "emergence", "metrics", "failure"),
}


def test_topics_list_show_and_export(db_url: str, tmp_path: Path) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    engine = make_engine(db_url)
    try:
        factory = make_session_factory(engine)
        planted: dict[str, int] = {}
        for cluster, phrases in enumerate(PHRASES[:3]):
            planted |= _plant(factory, cluster, 40, 0, now, phrases, seed=cluster)
        # an old trace, outside `--since 1d`, with a topic
        planted |= _plant(factory, 0, 1, 500, now - timedelta(days=3), PHRASES[0], seed=9)
        _job(factory, lookback="7d").run(now)
        with factory() as session:
            topics = load_topics(session)
            assigned = dict(
                (t, i) for t, i in session.execute(select(TraceTopic.trace_id, TraceTopic.topic_id))
            )
    finally:
        engine.dispose()
    assert len(topics) == 3 and set(assigned) == set(planted)
    env = {"RAGPULSE_DATABASE__URL": db_url}

    done = ragpulse("topics", "--json", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert set(listed) == {"since", "until", "traces", "without_topic", "topics"}
    assert listed["traces"] == len(planted) and listed["without_topic"] == 0
    assert [set(t) for t in listed["topics"]] == [TOPIC_KEYS] * 3
    assert sum(t["volume"] for t in listed["topics"]) == len(planted)
    assert abs(sum(t["share"] for t in listed["topics"]) - 1.0) < 1e-9
    assert {t["id"] for t in listed["topics"]} == {t.id for t in topics}
    # no traffic before the last day, no answers, no outcomes: nothing emerging, no signal
    assert [(t["emerging"], t["metrics"], t["failure"]) for t in listed["topics"]] == [
        (False, {}, None)
    ] * 3
    volumes = [t["volume"] for t in listed["topics"]]
    assert volumes == sorted(volumes, reverse=True)

    recent = json.loads(ragpulse("topics", "--since", "1d", "--json", cwd=tmp_path, env=env).stdout)
    assert recent["traces"] == len(planted) - 1

    text = ragpulse("topics", cwd=tmp_path, env=env)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith(f"3 topics over {len(planted)} traces with an embedding")
    for topic in topics:
        assert topic.label in text.stdout

    first = listed["topics"][0]
    shown = ragpulse("topics", "show", str(first["id"]), "--json", cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    one = json.loads(shown.stdout)
    assert set(one) == TOPIC_KEYS | {"active", "examples", "model", "method", "params", "names"}
    assert one["name"] is None and one["names"] is None  # no judge: no name
    assert one["volume"] == first["volume"] and one["active"] is True
    assert len(one["examples"]) == 5 and one["params"]["min_size"] == 10
    plain = ragpulse("topics", "show", str(first["id"]), cwd=tmp_path, env=env)
    assert plain.stdout.startswith(f"topic {first['id']} (active): {first['label']}")
    assert one["examples"][0] in plain.stdout
    missing = ragpulse("topics", "show", "999", cwd=tmp_path, env=env)
    assert missing.returncode == 1 and "no topic 999" in missing.stderr

    out = tmp_path / "topics.jsonl"
    exported = ragpulse(
        "topics", "export", "--since", "7d", "--output", str(out), cwd=tmp_path, env=env
    )
    assert exported.returncode == 0, exported.stderr
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == len(planted)
    labels = {t.id: t.label for t in topics}
    for line in lines:
        assert set(line) == {"trace_id", "topic_id", "topic_label"}
        assert line["topic_id"] == assigned[line["trace_id"]]
        assert line["topic_label"] == labels[line["topic_id"]]
    assert [line["trace_id"] for line in lines] == sorted(planted)
    assert f"{len(planted)} traces written" in exported.stderr
