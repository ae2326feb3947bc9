"""The `judgments` table as cache and budget ledger (SQLite and PostgreSQL), and all judge
metrics through the runner: a second run is served entirely from SQL."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from collector.settings import load_settings
from collector.store.judgments import SqlJudgmentStore
from collector.store.models import Judgment
from collector.store.session import make_engine, make_session_factory
from evaluators.judge import JudgeClient
from evaluators.judge.api import score
from evaluators.judge.prompts.context_relevance import CONTEXT_RELEVANCE
from evaluators.outcome import Score, Skipped
from evaluators.registry import EvalContext
from evaluators.runner import EvaluationResult, evaluate
from ragpulse.judge import make_judge as judge_from_settings
from tests.evaluators.judge.helpers import make_judge, sample
from tests.fixtures.embedder import VectorEmbedder
from tests.fixtures.llm_server import Reply, ScriptedLLM, auto_reply

JUDGE_METRICS = [
    "context_relevance",
    "context_entity_recall",
    "context_precision",
    "context_recall",
    "faithfulness",
    "noise_sensitivity_relevant",
    "noise_sensitivity_irrelevant",
    "response_relevancy",
    "answer_relevance",
    "e2e_score",
]


def test_sql_store_is_the_cache(llm_server: ScriptedLLM, db_url: str) -> None:
    llm_server.script(
        "ragpulse judge task: context_relevance",
        Reply(content={"ratings": [{"context": 1, "score": 1}]}),
    )
    engine = make_engine(db_url)
    sessions = make_session_factory(engine)
    s = sample("Что такое RAG?", ["RAG — это поиск плюс генерация."])
    first = score(
        "context_relevance", [s], make_judge(llm_server, store=SqlJudgmentStore(sessions))
    )
    second = score(
        "context_relevance", [s], make_judge(llm_server, store=SqlJudgmentStore(sessions))
    )
    assert first == second and isinstance(first[0], Score) and first[0].value == 0.5
    assert len(llm_server.requests) == 1
    with sessions() as session:
        [row] = session.execute(select(Judgment)).scalars().all()
    assert row.status == "ok" and row.model == "openai/judge-a"
    assert row.metric == "context_relevance" and row.trace_id == "t1"
    assert row.prompt_version == CONTEXT_RELEVANCE.version
    assert row.temperature == pytest.approx(0.1)
    assert row.prompt_tokens and row.completion_tokens and row.latency_ms is not None
    assert row.cost_usd == 0.0  # the test model has no price in litellm's map
    assert row.parsed == {"ratings": [{"context": 1, "score": 1}]}
    engine.dispose()


def test_sql_budget_counts_calls_across_clients(llm_server: ScriptedLLM, sqlite_url: str) -> None:
    llm_server.fallback = auto_reply
    sessions = make_session_factory(make_engine(sqlite_url))
    samples = [sample(f"q{i}?", ["c"], trace_id=f"t{i}") for i in range(3)]
    score(
        "context_relevance", samples[:2], make_judge(llm_server, store=SqlJudgmentStore(sessions))
    )
    later = make_judge(llm_server, store=SqlJudgmentStore(sessions), max_calls_per_hour=2)
    assert score("context_relevance", samples[2:], later) == [Skipped("budget")]
    assert len(llm_server.requests) == 2


def test_all_judge_metrics_through_the_runner(llm_server: ScriptedLLM, sqlite_url: str) -> None:
    llm_server.fallback = auto_reply
    settings = load_settings(
        judge={"models": ["openai/judge-a"], "api_base": llm_server.base_url, "api_key": "k"},
    )
    sessions = make_session_factory(make_engine(sqlite_url))
    samples = [
        sample(
            f"Вопрос {i}?",
            [f"контекст {i}.{j}" for j in range(4)],
            answer=f"Ответ {i}.",
            reference=f"Эталон {i}.",
            trace_id=f"t{i}",
        )
        for i in range(3)
    ]
    embedder = VectorEmbedder(
        {**{f"Вопрос {i}?": [1, 0] for i in range(3)}, "what is it?": [0.6, 0.8]}
    )

    def run() -> tuple[EvaluationResult, JudgeClient]:
        judge = judge_from_settings(settings.judge, sessions)
        assert judge is not None
        ctx = EvalContext(judge=judge, embedder=embedder)
        return evaluate(samples, JUDGE_METRICS, ctx), judge

    result, judge = run()
    calls = len(llm_server.requests)
    for name in JUDGE_METRICS:
        agg = result.aggregates[name]
        assert agg.n == 3 and agg.errors == 0 and agg.skipped == 0, name
        assert agg.signature.prompt_hash and agg.signature.judge_model == "openai/judge-a"
    assert result.aggregates["context_relevance"].value == pytest.approx(0.5)
    # Per sample with 4 contexts: relevance 1, entities 2, precision 1, recall 1,
    # faithfulness 2, noise 2 (its answer split is faithfulness's) + 0 (the other mode),
    # response relevancy 1, answer relevance 1, e2e 1 = 12 (RAGAS: 2+4+1+2+11+11+1 = 32
    # for its seven of these).
    assert calls == 3 * 12
    assert judge.stats.calls == calls

    second, judge2 = run()
    assert len(llm_server.requests) == calls  # nothing paid twice
    assert judge2.stats.calls == 0 and judge2.stats.cache_hits >= calls
    for name in JUDGE_METRICS:
        assert second.aggregates[name].value == result.aggregates[name].value


def test_no_models_means_no_judge() -> None:
    assert judge_from_settings(load_settings().judge) is None
