"""judge_consistency re-judges recent traces over real HTTP (litellm -> scripted server)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from collector.ingest.kafka.broker import free_port
from collector.jobs.catalog.judge_consistency import REJUDGED, judgment_score
from collector.jobs.scheduler import build_runner
from collector.settings import load_settings
from collector.store.models import Judgment, MetricResult, Trace
from collector.store.samples import trace_to_sample
from collector.store.session import make_engine, make_session_factory
from evaluators.judge import JudgeConfig
from evaluators.judge.api import score
from evaluators.judge.metric import PROMPT_CHOICE, PROMPTS_BY_METRIC
from evaluators.outcome import Skipped
from evaluators.registry import FAMILIES, EvalContext, known_names
from evaluators.runner import evaluate
from ragpulse.job_setup import job_environment
from ragpulse.judge import make_judge
from tests.evaluators.judge.helpers import make_judge as judge_for
from tests.evaluators.judge.helpers import sample
from tests.fixtures.embedder import VectorEmbedder
from tests.fixtures.llm_server import Reply, ScriptedLLM, auto_reply, prompt_text
from tests.jobs.helpers import add_trace


class _NoEmbedder:
    model_name = "none"

    def encode(self, texts: Any) -> Any:
        raise AssertionError("judge_consistency needs no embeddings")


def _latest(factory: Any, metric: str, window: str) -> MetricResult:
    with factory() as session:
        row: MetricResult = session.scalars(
            select(MetricResult)
            .where(MetricResult.metric == metric, MetricResult.window == window)
            .order_by(MetricResult.id.desc())
            .limit(1)
        ).one()
    return row


def test_rejudges_a_sample_and_computes_the_judge_metrics(
    sqlite_url: str, llm_server: ScriptedLLM
) -> None:
    e2e_alpha = iter([0.9, 0.2])  # the repeat disagrees by more than delta = 0.5

    def reply(body: dict[str, Any]) -> Reply:
        text = prompt_text(body)
        if "ragpulse judge task: e2e_score" in text and "alpha" in text:
            return Reply(content={"score": next(e2e_alpha), "reason": "scripted"})
        return auto_reply(body)

    llm_server.fallback = reply
    settings = load_settings(
        judge={"models": ["openai/judge-a"], "api_base": llm_server.base_url, "api_key": "sk-x"},
        scheduler={"jobs": ["judge_consistency"], "consistency_sample": 5},
    )
    engine = make_engine(sqlite_url)
    factory = make_session_factory(engine)
    now = datetime.now(UTC)
    with factory() as session:
        for name in ("alpha", "beta"):
            add_trace(
                session,
                name,
                now - timedelta(minutes=3),
                purposes=("judge",),
                question=f"What is {name}?",
                answer=f"{name} is a test answer.",
                reference=f"{name} is the reference answer.",
                contexts=[{"id": "d1", "text": f"{name} is described here."}],
            )
        session.commit()
        rows = list(session.scalars(select(Trace)))
    env = job_environment(
        settings, engine, embedder=_NoEmbedder(), judge=make_judge(settings.judge, factory)
    )
    env.to_sample = trace_to_sample
    # What rag_quality does first: one cached judgment per trace, metric and model.
    first = evaluate(
        [trace_to_sample(r) for r in rows],
        ["e2e_score", "answer_relevance"],
        EvalContext(judge=env.judge, options=env.options.metric_options),
    )
    first_calls = len(llm_server.requests)
    assert first_calls == 4, first.per_sample

    runner = build_runner(settings, engine, env)
    (report,) = runner.run_many()
    assert (report.status, report.new_traces) == ("ok", 2), report.message
    # The cache was bypassed: every judgment was asked again over HTTP.
    assert len(llm_server.requests) == 2 * first_calls
    consistency = _latest(factory, "judge_consistency", "1h")
    assert (consistency.value, consistency.n) == (0.75, 4)  # alpha's e2e score moved by 0.7
    assert consistency.ci_lower is not None and consistency.ci_lower < 0.75
    errors = _latest(factory, "judge_error_rate", "24h")
    assert (errors.value, errors.n) == (0.0, 8)
    latency = _latest(factory, "judge_latency_ms_avg", "7d")
    assert latency.n == 8 and latency.value is not None and latency.value > 0
    assert "judge-a" in latency.signature

    # Both traces are re-judged already: the next run asks nothing and keeps the numbers.
    (again,) = runner.run_many()
    assert (again.status, again.new_traces) == ("ok", 0)
    assert len(llm_server.requests) == 2 * first_calls
    assert _latest(factory, "judge_consistency", "24h").value == 0.75
    with factory() as session:
        assert session.scalar(select(func.count()).select_from(Judgment)) == 8
    engine.dispose()


def test_without_a_judge_the_job_is_a_visible_skip(sqlite_url: str) -> None:
    settings = load_settings(scheduler={"jobs": ["judge_consistency"]})
    engine = make_engine(sqlite_url)
    env = job_environment(settings, engine, embedder=_NoEmbedder())
    (report,) = build_runner(settings, engine, env).run_many()
    assert report.status == "skipped" and "no judge" in report.message
    row = _latest(make_session_factory(engine), "judge_consistency", "24h")
    assert row.value is None and row.skip_reasons == {"no judge configured": 0}
    engine.dispose()


@pytest.mark.parametrize(
    ("parsed", "score"),
    [
        ({"score": 0.4, "reason": "x"}, 0.4),
        ({"ratings": [{"context": 1, "score": 2}, {"context": 2, "score": 0}]}, 0.5),
        ({"verdicts": [{"context": 1, "useful": 1}, {"context": 2, "useful": 1}]}, 1.0),
        ({"statements": [{"statement": "a", "attributed": 0}]}, 0.0),
        ({"statements": ["a", "b"]}, None),
        # response relevancy's only verdict: whether the answer is noncommittal (a flip
        # turns the metric to 0)
        (
            {
                "questions": [
                    {"question": "a", "noncommittal": 1},
                    {"question": "b", "noncommittal": 0},
                ]
            },
            0.5,
        ),
        (None, None),
    ],
)
def test_judgment_score(parsed: Any, score: float | None) -> None:
    assert judgment_score(parsed) == score


def _one_judged_trace(factory: Any) -> None:
    """One recent trace sampled for the judge jobs, with everything the judge metrics read."""
    with factory() as session:
        add_trace(
            session,
            "alpha",
            datetime.now(UTC) - timedelta(minutes=3),
            purposes=("judge",),
            question="What is alpha?",
            answer="alpha is a test answer.",
            reference="alpha is the reference answer.",
            contexts=[{"id": "d1", "text": "alpha is described here."}],
        )
        session.commit()


def test_rag_quality_results_name_their_judge_and_prompt(
    sqlite_url: str, llm_server: ScriptedLLM
) -> None:
    """A scheduled judge metric carries the signature `ragpulse evaluate` gives it: the judge
    models and the metric's prompt hash, so a dashboard number can be traced to its prompt."""
    llm_server.fallback = auto_reply
    settings = load_settings(
        judge={"models": ["openai/judge-a"], "api_base": llm_server.base_url, "api_key": "sk-x"},
        scheduler={"jobs": ["rag_quality"]},
    )
    engine = make_engine(sqlite_url)
    factory = make_session_factory(engine)
    _one_judged_trace(factory)
    judge = make_judge(settings.judge, factory)
    assert judge is not None
    env = job_environment(settings, engine, embedder=_NoEmbedder(), judge=judge)
    (report,) = build_runner(settings, engine, env).run_many()
    assert report.status == "ok", report.message
    row = _latest(factory, "faithfulness_rating", "1h")
    assert row.n == 1
    assert row.signature == str(judge.signature("faithfulness_rating"))
    assert "judge-a" in row.signature and "prompt" in row.signature
    engine.dispose()


def test_an_unreachable_judge_leaves_the_traces_pending(
    sqlite_url: str, llm_server: ScriptedLLM
) -> None:
    """A rag_quality run whose every judge call failed to connect measured nothing: it fails
    (counted, logged) without recording the traces, and the next run with the judge back
    judges them, instead of the traces being passed over for good."""
    llm_server.fallback = auto_reply
    engine = make_engine(sqlite_url)
    factory = make_session_factory(engine)
    _one_judged_trace(factory)

    def run(api_base: str) -> Any:
        settings = load_settings(
            judge={
                "models": ["openai/judge-a"],
                "api_base": api_base,
                "api_key": "sk-x",
                "max_retries": 0,
            },
            scheduler={"jobs": ["rag_quality"]},
        )
        judge = make_judge(settings.judge, factory)
        env = job_environment(settings, engine, embedder=_NoEmbedder(), judge=judge)
        (report,) = build_runner(settings, engine, env).run_many()
        return report

    down = run(f"http://127.0.0.1:{free_port()}/v1")
    assert down.status == "error" and "stay pending" in down.message, down
    assert not llm_server.requests
    back = run(llm_server.base_url)
    assert (back.status, back.new_traces) == ("ok", 1), back.message
    assert llm_server.requests
    assert _latest(factory, "faithfulness_rating", "1h").n == 1
    engine.dispose()


def test_rag_quality_counts_an_empty_retrieval_as_recall_zero(
    sqlite_url: str, llm_server: ScriptedLLM
) -> None:
    """A retrieval outage shows in both recalls as it does in HitRate: a trace with a
    reference that retrieved nothing is a score of 0 in `n`, not a skip; a trace without a
    reference is still skipped with its reason."""
    llm_server.fallback = auto_reply
    settings = load_settings(
        judge={"models": ["openai/judge-a"], "api_base": llm_server.base_url, "api_key": "sk-x"},
        scheduler={"jobs": ["rag_quality"]},
    )
    engine = make_engine(sqlite_url)
    factory = make_session_factory(engine)
    ts = datetime.now(UTC) - timedelta(minutes=3)
    found = [{"id": "d1", "text": "The reference, retrieved."}]
    with factory() as session:
        for trace, reference, contexts in (
            ("retrieved", "The reference.", found),
            ("outage", "The reference.", []),
            ("no-reference", None, None),
        ):
            add_trace(
                session,
                trace,
                ts,
                purposes=("judge",),
                answer="An answer.",
                reference=reference,
                contexts=contexts,
            )
        session.commit()
    env = job_environment(
        settings, engine, embedder=_NoEmbedder(), judge=make_judge(settings.judge, factory)
    )
    (report,) = build_runner(settings, engine, env).run_many()
    assert report.status == "ok", report.message
    # auto_reply: context_recall attributes its one statement (1.0); entity recall finds
    # entities 1 and 3 of 3 (2/3).
    for metric, retrieved in (("context_recall", 1.0), ("context_entity_recall", 2 / 3)):
        row = _latest(factory, metric, "1h")
        assert (row.n, row.skipped, row.skip_reasons) == (2, 1, {"no reference": 1}), metric
        assert row.value == pytest.approx((retrieved + 0.0) / 2), metric
    engine.dispose()


CONFIGS = [JudgeConfig(models=("m",), response_relevancy_with_question=w) for w in (True, False)]


def single_request_judge_metrics(config: JudgeConfig) -> set[str]:
    """From the registry: the judge metrics that use one prompt under `config` (the prompts
    `judge_metric` registered, or those its `prompts_for` picks for the configuration)."""
    known_names()  # loads every metric module
    out = set()
    for family, spec in FAMILIES.items():
        if not spec.uses_judge:
            continue
        choose = PROMPT_CHOICE.get(family)
        prompts = choose(config) if choose is not None else PROMPTS_BY_METRIC[family]
        if len(prompts) == 1:
            out.add(family)
    return out


@pytest.mark.parametrize("config", CONFIGS, ids=["with_question", "answer_only"])
def test_every_single_request_judge_metric_is_rejudged(config: JudgeConfig) -> None:
    """Seed 004 §8 measures consistency by judging the same example again; a metric of one
    request per model repeats the very same input, so each one must be in REJUDGED (a new
    one is missed otherwise, as faithfulness_rating, whose §11.2 bands read its
    consistency, once was)."""
    single = single_request_judge_metrics(config)
    assert {"faithfulness_rating", "e2e_score", "context_recall"} <= single
    assert sorted(single - set(REJUDGED)) == []
    assert len(REJUDGED) == len(set(REJUDGED)) and set(REJUDGED) <= set(FAMILIES)


def test_the_registry_tells_single_request_metrics_apart(llm_server: ScriptedLLM) -> None:
    """What the registry says is what happens over HTTP: each judge metric on a full sample
    (fresh cache) sends exactly one request per model iff it registered one prompt."""
    llm_server.fallback = auto_reply
    full = sample(
        "What is alpha?",
        ["alpha is described here.", "beta is something else."],
        answer="alpha is a test answer.",
        reference="alpha is the reference answer.",
    )
    embedder = VectorEmbedder({"What is alpha?": [1.0, 0.0], "what is it?": [0.6, 0.8]})
    measured = set()
    for family in sorted(f for f, spec in FAMILIES.items() if spec.uses_judge):
        before = len(llm_server.requests)
        [outcome] = score(family, [full], judge_for(llm_server), embedder=embedder)
        assert not isinstance(outcome, Skipped), (family, outcome)
        if len(llm_server.requests) - before == 1:
            measured.add(family)
    assert measured == single_request_judge_metrics(CONFIGS[0])
