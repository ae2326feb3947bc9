"""The judge client over real HTTP (scripted local server): retries, timeouts, malformed
replies, refusals, the cache and budgets, each through both transports (straight HTTP,
litellm), which must behave alike."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from evaluators.judge import InMemoryJudgmentStore, JudgeClient, JudgeConfig, JudgmentRecord
from evaluators.judge.api import ascore, score
from evaluators.judge.metric import JudgeScore
from evaluators.outcome import Failed, Outcome, Score, Skipped
from tests.evaluators.judge import helpers
from tests.evaluators.judge.helpers import make_judge, sample
from tests.fixtures.llm_server import Reply, ScriptedLLM

TASK = "ragpulse judge task: context_relevance"
GOOD = {"ratings": [{"context": 1, "score": 2}, {"context": 2, "score": 0}]}
SAMPLE = sample("What is machine learning?", ["ML is a subset of AI.", "Cloudy tomorrow."])


@pytest.fixture(autouse=True, params=["http", "litellm"])
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(helpers, "TRANSPORT", request.param)
    return str(request.param)


def run(server: ScriptedLLM, *replies: Reply, **overrides: Any) -> tuple[Outcome, JudgeClient]:
    server.script(TASK, *replies)
    judge = make_judge(server, **overrides)
    [outcome] = score("context_relevance", [SAMPLE], judge)
    return outcome, judge


def records(judge: JudgeClient) -> list[JudgmentRecord]:
    assert isinstance(judge.store, InMemoryJudgmentStore)
    return judge.store.records


def test_rate_limited_then_success(llm_server: ScriptedLLM) -> None:
    outcome, judge = run(llm_server, Reply(status=429), Reply(content=GOOD))
    assert outcome == JudgeScore(0.5, {"openai/judge-a": 0.5})
    assert len(llm_server.requests) == 2
    assert judge.stats.retries == 1 and judge.stats.errors == 0
    statuses = [(r.status, r.error_type) for r in records(judge)]
    assert statuses == [("error", "rate_limited"), ("ok", None)]


def test_server_errors_until_retries_run_out(llm_server: ScriptedLLM) -> None:
    outcome, judge = run(llm_server, Reply(status=500), max_retries=2)
    assert isinstance(outcome, Failed) and outcome.error_type == "server_error"
    assert "after 3 attempts" in outcome.message
    assert len(llm_server.requests) == 3
    assert judge.stats.errors == 1 and judge.stats.retries == 2


def test_timeout_is_a_typed_failure(llm_server: ScriptedLLM) -> None:
    outcome, _ = run(llm_server, Reply(content=GOOD, delay_s=1.0), timeout_s=0.2, max_retries=1)
    assert isinstance(outcome, Failed) and outcome.error_type == "timeout"
    assert len(llm_server.requests) == 2


def test_bad_request_is_not_retried(llm_server: ScriptedLLM) -> None:
    outcome, _ = run(llm_server, Reply(status=400, content="model not found"))
    assert isinstance(outcome, Failed) and outcome.error_type == "bad_request"
    assert len(llm_server.requests) == 1


def test_fenced_json_is_read(llm_server: ScriptedLLM) -> None:
    fenced = (
        'My ratings:\n```json\n{"ratings": [{"context": 1, "score": 2}, '
        '{"context": 2, "score": 0}]}\n```'
    )
    outcome, _ = run(llm_server, Reply(content=fenced))
    assert isinstance(outcome, Score) and outcome.value == 0.5
    assert len(llm_server.requests) == 1


def test_non_json_gets_one_repair_request(llm_server: ScriptedLLM) -> None:
    outcome, judge = run(llm_server, Reply(content="Both passages are fine."), Reply(content=GOOD))
    assert isinstance(outcome, Score) and outcome.value == 0.5
    assert len(llm_server.requests) == 2
    repair = llm_server.requests[1]["messages"]
    assert repair[-2] == {"role": "assistant", "content": "Both passages are fine."}
    assert "could not be used" in repair[-1]["content"]
    assert judge.stats.repairs == 1


def test_non_json_twice_fails_after_one_repair(llm_server: ScriptedLLM) -> None:
    outcome, _ = run(llm_server, Reply(content="Both passages are fine."))
    assert isinstance(outcome, Failed) and outcome.error_type == "invalid_json"
    assert len(llm_server.requests) == 2


def test_missing_verdict_is_repaired(llm_server: ScriptedLLM) -> None:
    partial = {"ratings": [{"context": 1, "score": 2}]}
    outcome, _ = run(llm_server, Reply(content=partial), Reply(content=GOOD))
    assert isinstance(outcome, Score) and outcome.value == 0.5
    assert "no verdict for context [2]" in llm_server.requests[1]["messages"][-1]["content"]


def test_truncated_output_is_an_error_not_a_score(llm_server: ScriptedLLM) -> None:
    outcome, judge = run(
        llm_server, Reply(content='{"ratings": [{"context": 1, "sc', finish_reason="length")
    )
    assert isinstance(outcome, Failed) and outcome.error_type == "truncated"
    # One repair request ("cut off ... more briefly"), then the typed error.
    assert len(llm_server.requests) == 2
    assert "cut off at the token limit" in llm_server.requests[1]["messages"][-1]["content"]
    assert [r.error_type for r in records(judge)] == ["truncated", "truncated"]
    assert (records(judge)[0].output or "").startswith('{"ratings"')


def test_truncated_output_with_every_item_is_closed_locally(llm_server: ScriptedLLM) -> None:
    cut = '{"ratings": [{"context": 1, "score": 2}, {"context": 2, "score": 0}], "no'
    outcome, judge = run(llm_server, Reply(content=cut, finish_reason="length"))
    assert isinstance(outcome, Score) and outcome.value == 0.5
    assert len(llm_server.requests) == 1 and judge.stats.repairs == 0


def test_truncated_output_is_repaired_once(llm_server: ScriptedLLM) -> None:
    cut = '{"ratings": [{"context": 1, "score": 2}, {"context": 2, "sc'
    outcome, judge = run(
        llm_server, Reply(content=cut, finish_reason="length"), Reply(content=GOOD)
    )
    assert isinstance(outcome, Score) and outcome.value == 0.5
    assert len(llm_server.requests) == 2 and judge.stats.repairs == 1


def test_out_of_range_grade_is_an_error(llm_server: ScriptedLLM) -> None:
    bad = {"ratings": [{"context": 1, "score": 3}, {"context": 2, "score": 0}]}
    outcome, _ = run(llm_server, Reply(content=bad))
    assert isinstance(outcome, Failed) and outcome.error_type == "out_of_range"
    assert len(llm_server.requests) == 2  # one repair request, then the typed error
    assert "above 2" in llm_server.requests[1]["messages"][-1]["content"] or (
        "not one of" in llm_server.requests[1]["messages"][-1]["content"]
    )


def test_out_of_range_grade_is_repaired_once(llm_server: ScriptedLLM) -> None:
    bad = {"ratings": [{"context": 1, "score": 3}, {"context": 2, "score": 0}]}
    outcome, _ = run(llm_server, Reply(content=bad), Reply(content=GOOD))
    assert isinstance(outcome, Score) and outcome.value == 0.5


@pytest.mark.parametrize(
    "reply",
    [
        Reply(refusal="I can't assist with that."),
        Reply(content="I'm sorry, but I cannot evaluate this content."),
        Reply(content=None, finish_reason="content_filter"),
    ],
)
def test_refusals_are_typed(llm_server: ScriptedLLM, reply: Reply) -> None:
    outcome, _ = run(llm_server, reply)
    assert isinstance(outcome, Failed) and outcome.error_type == "refusal"
    assert len(llm_server.requests) == 1


def test_empty_choices(llm_server: ScriptedLLM) -> None:
    outcome, _ = run(llm_server, Reply(empty_choices=True))
    assert isinstance(outcome, Failed) and outcome.error_type == "empty_response"


def test_json_schema_is_requested_and_dropped_when_rejected(llm_server: ScriptedLLM) -> None:
    outcome, _ = run(
        llm_server,
        Reply(status=400, content="response_format type json_schema is not supported"),
        Reply(content=GOOD),
    )
    assert isinstance(outcome, Score)
    first, second = llm_server.requests
    assert first["response_format"]["type"] == "json_schema"
    # llama.cpp's form of the same schema comes next.
    assert second["response_format"]["type"] == "json_object"
    assert second["response_format"]["schema"]["required"] == ["ratings"]
    assert first["temperature"] == pytest.approx(0.1)


def test_second_run_is_served_from_the_cache(llm_server: ScriptedLLM) -> None:
    llm_server.script(TASK, Reply(content=GOOD))
    store = InMemoryJudgmentStore()
    judge = make_judge(llm_server, store=store)
    first = score("context_relevance", [SAMPLE], judge)
    assert len(llm_server.requests) == 1
    # Same client in a new event loop, then a fresh client on the same store.
    assert score("context_relevance", [SAMPLE], judge) == first
    assert score("context_relevance", [SAMPLE], make_judge(llm_server, store=store)) == first
    assert len(llm_server.requests) == 1
    assert judge.stats.cache_hits == 1
    # Another temperature is another request.
    score("context_relevance", [SAMPLE], make_judge(llm_server, store=store, temperature=0.0))
    assert len(llm_server.requests) == 2


def test_identical_requests_in_flight_share_one_call(llm_server: ScriptedLLM) -> None:
    llm_server.script(TASK, Reply(content=GOOD, delay_s=0.1))
    judge = make_judge(llm_server)

    async def both() -> list[object]:
        return list(
            await asyncio.gather(
                ascore("context_relevance", [SAMPLE], judge),
                ascore("context_relevance", [SAMPLE], judge),
            )
        )

    first, second = asyncio.run(both())
    assert first == second
    assert len(llm_server.requests) == 1


def test_budget_exhaustion_skips_with_reason(llm_server: ScriptedLLM) -> None:
    llm_server.script(TASK, Reply(content=GOOD))
    judge = make_judge(llm_server, max_calls_per_hour=1)
    other = sample("Что такое ML?", ["ML — это раздел ИИ.", "Завтра облачно."], trace_id="t2")
    outcomes = score("context_relevance", [SAMPLE, other], judge)
    assert sorted(type(o).__name__ for o in outcomes) == ["JudgeScore", "Skipped"]
    assert Skipped("budget") in outcomes
    assert len(llm_server.requests) == 1
    assert judge.stats.budget_skips == 1


def test_usd_budget(llm_server: ScriptedLLM) -> None:
    import litellm

    litellm.register_model(
        {
            "openai/priced-judge": {
                "input_cost_per_token": 0.01,
                "output_cost_per_token": 0.02,
                "litellm_provider": "openai",
                "mode": "chat",
            }
        }
    )
    llm_server.script(TASK, Reply(content=GOOD))
    judge = make_judge(llm_server, models=("openai/priced-judge",), max_usd_per_day=0.01)
    other = sample("Second question?", ["a", "b"], trace_id="t2")
    # Spending is known only after a reply, so calls already in flight may overshoot by
    # at most max_concurrency requests; once it is reached nothing more is sent.
    assert isinstance(score("context_relevance", [SAMPLE], judge)[0], Score)
    assert judge.stats.cost_usd > 0.01
    assert score("context_relevance", [other], judge) == [Skipped("budget")]
    assert len(llm_server.requests) == 1
    assert records(judge)[0].cost_usd == pytest.approx(judge.stats.cost_usd)


def test_no_judge_and_no_contexts_are_skipped() -> None:
    assert score("context_relevance", [SAMPLE], None) == [Skipped("no judge configured")]
    judge = make_judge(ScriptedLLM(port=1))
    assert score("context_relevance", [sample("q?", [])], judge) == [Skipped("no contexts")]


def test_api_key_stays_out_of_repr() -> None:
    config = JudgeConfig(models=("m",), api_key="sk-secret-value")
    assert "sk-secret-value" not in repr(config)
