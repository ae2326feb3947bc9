"""The topics job names its topics with the LLM judge (issue 41), over real HTTP to the local
OpenAI-compatible test server: one request per new topic, fenced, a kept topic keeping its
name, the answers cached by input, model and prompt, at most `names_per_run` a run; and
`ragpulse topics` shows the names."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from collector.jobs.catalog.topics import TopicsJob, definition
from collector.jobs.run.definition import JobEnvironment
from collector.jobs.windows.window import parse_windows
from collector.settings import JudgeSettings, Settings, TopicSettings
from collector.store.models import Topic
from collector.store.session import make_engine, make_session_factory
from collector.store.topics import load_topics
from evaluators.judge.prompts.fencing import FENCE_MARK
from evaluators.topics.naming import TOPIC_NAME
from ragpulse.judge import make_judge
from tests.fixtures.cli import ragpulse_in_process as ragpulse
from tests.fixtures.llm_server import Reply, ScriptedLLM, prompt_text
from tests.jobs.test_topics_job import MODEL, NEW_PHRASES, PHRASES, _plant

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
_FIRST_KEYWORD = re.compile(r"<untrusted_keywords-[0-9a-f]+ language=\"(\w+)\">\n([^,\n]+)")


def _namer(body: dict[str, Any]) -> Reply:
    """A judge naming a topic after its first keyword of each language (quoted and with a
    final period, which the job drops)."""
    text = prompt_text(body)
    if "ragpulse judge task: topic_name" not in text:
        return Reply(status=400, content="not a topic_name request")
    names = [
        {"language": lang.upper(), "name": f'"{word.strip()} questions."'}
        for lang, word in _FIRST_KEYWORD.findall(text)
    ]
    return Reply(content={"names": names})


def _job(
    factory: sessionmaker[Session],
    llm: ScriptedLLM,
    *,
    names_per_run: int = 20,
    judge_model: str = "openai/namer",
) -> TopicsJob:
    settings = JudgeSettings(models=[judge_model], api_base=llm.base_url, api_key="sk-x")
    judge = make_judge(settings.model_copy(update={"max_retries": 0}), factory)
    cfg = TopicSettings(min_topic_size=10, recluster_every="24h", names_per_run=names_per_run)
    env = JobEnvironment(
        session_factory=factory, windows=parse_windows(["1h"]), group_labels=(), judge=judge
    )
    return TopicsJob(definition(Settings()), env, topics=cfg, model=MODEL)


def _names(factory: sessionmaker[Session]) -> dict[int, dict[str, str] | None]:
    with factory() as session:
        return {t.id: dict(t.name.names) if t.name else None for t in load_topics(session)}


@pytest.fixture
def factory(db_url: str) -> Any:
    engine = make_engine(db_url)
    try:
        yield make_session_factory(engine)
    finally:
        engine.dispose()


def test_new_topics_are_named_once_kept_ones_keep_their_names(
    factory: sessionmaker[Session], llm_server: ScriptedLLM
) -> None:
    llm_server.fallback = _namer
    for cluster, phrases in enumerate(PHRASES):
        _plant(factory, cluster, 60, 0, NOW, phrases, seed=cluster)
    report = _job(factory, llm_server).run(NOW)
    assert report.status == "ok" and "4 topics named" in report.message, report.message
    names = _names(factory)
    assert len(names) == 4 and len(llm_server.requests) == 4  # one request per topic
    with factory() as session:
        topics = {t.id: t for t in load_topics(session)}
    for topic_id, name in names.items():
        keywords = topics[topic_id].keywords
        # in the language(s) of its questions, cleaned of the quotes and the period
        assert name == {lang: f"{words[0]} questions" for lang, words in keywords.items()}
        assert topics[topic_id].title == " / ".join(
            name[lang] for lang in sorted(name, key=lambda lang: (lang != "en", lang))
        )
        assert topics[topic_id].name is not None
        assert topics[topic_id].name.model == "openai/namer"  # type: ignore[union-attr]
        assert topics[topic_id].name.prompt == TOPIC_NAME.version  # type: ignore[union-attr]
    # the user's words went in fenced, under this request's own code
    sent = llm_server.requests[0]["messages"]
    user = sent[-1]["content"]
    assert "<untrusted_keywords-" in user and "<untrusted_example_questions-" in user
    assert FENCE_MARK not in user and "structured" not in user
    assert "ragpulse judge task: topic_name" in sent[0]["content"]

    # a day later the topics are found again: kept ones keep their names, no request; a
    # new cluster is a new topic, named with one request
    later = NOW + timedelta(hours=25)
    for cluster, phrases in enumerate(PHRASES):
        _plant(factory, cluster, 60, 1000, later, phrases, seed=10 + cluster)
    _plant(factory, len(PHRASES), 60, 0, later, NEW_PHRASES, seed=99)
    report = _job(factory, llm_server).run(later)
    assert "1 topics named" in report.message, report.message
    after = _names(factory)
    assert len(llm_server.requests) == 5
    assert {i: n for i, n in after.items() if i in names} == names
    (new,) = set(after) - set(names)
    assert (after[new] or {}).keys() == {"en"}


def test_names_are_cached_budgeted_and_shown(
    factory: sessionmaker[Session], llm_server: ScriptedLLM, db_url: str, tmp_path: Path
) -> None:
    llm_server.fallback = _namer
    for cluster, phrases in enumerate(PHRASES[:3]):
        _plant(factory, cluster, 60, 0, NOW, phrases, seed=cluster)
    job = _job(factory, llm_server, names_per_run=1)
    job.run(NOW)
    assert (
        len(llm_server.requests) == 1 and sum(n is not None for n in _names(factory).values()) == 1
    )
    job.run(NOW + timedelta(minutes=1))
    job.run(NOW + timedelta(minutes=2))
    assert len(llm_server.requests) == 3 and all(_names(factory).values())
    job.run(NOW + timedelta(minutes=3))
    assert len(llm_server.requests) == 3  # all named: nothing asked

    # names lost (say, restored from a backup): the same keywords and examples are
    # answered from the judge's cache (the judgments table), without a request
    with factory() as session:
        session.execute(update(Topic).values(name=None))
        session.commit()
    report = _job(factory, llm_server).run(NOW + timedelta(minutes=4))
    assert "3 topics named" in report.message
    assert len(llm_server.requests) == 3 and all(_names(factory).values())

    env = {"RAGPULSE_DATABASE__URL": db_url}
    listed = ragpulse("topics", "--json", cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    topics = json.loads(listed.stdout)["topics"]
    assert len(topics) == 3 and all(t["name"].endswith(" questions") for t in topics)
    text = ragpulse("topics", cwd=tmp_path, env=env).stdout
    assert all(t["name"] in text for t in topics)
    one = ragpulse("topics", "show", str(topics[0]["id"]), "--json", cwd=tmp_path, env=env)
    assert json.loads(one.stdout)["names"]
    shown = ragpulse("topics", "show", str(topics[0]["id"]), cwd=tmp_path, env=env).stdout
    assert f": {topics[0]['name']}" in shown and "named by openai/namer" in shown

    # a judge that fails leaves the topics unnamed, for a later run
    with factory() as session:
        session.execute(update(Topic).values(name=None))
        session.commit()
    llm_server.fallback = lambda body: Reply(status=400, content="bad request")
    report = _job(factory, llm_server, judge_model="openai/other").run(NOW + timedelta(minutes=5))
    assert report.status == "ok" and "0 topics named, 3 failed" in report.message
    assert not any(_names(factory).values())
