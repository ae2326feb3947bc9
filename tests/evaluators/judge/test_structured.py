"""Structured output per server, over real HTTP (litellm -> scripted server emulating each
server's validation): the mode asked for, the fallback on a refusal, remembered per model."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from evaluators.judge import JudgeConfig
from evaluators.judge.api import score
from evaluators.judge.structured import MODES, mode_chain, parse_setting
from evaluators.outcome import Score
from exporters.prometheus import JudgeStateCollector
from tests.evaluators.judge.helpers import make_judge, sample
from tests.fixtures.llm_server import Reply, ScriptedLLM

TASK = "ragpulse judge task: context_relevance"
GOOD = {"ratings": [{"context": 1, "score": 2}, {"context": 2, "score": 0}]}
SAMPLES = [
    sample("What is ML?", ["ML is a subset of AI.", "Cloudy tomorrow."], trace_id="t1"),
    sample("Что такое ML?", ["ML — раздел ИИ.", "Завтра облачно."], trace_id="t2"),
]


def llama_cpp_validation(body: dict[str, Any]) -> str | None:
    """What llama-cpp-python's server says about OpenAI's json_schema response format."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") not in (None, "text", "json_object"):
        return "response_format: Input should be 'text' or 'json_object'"
    return None


def test_llama_cpp_refusal_falls_back_once_and_is_remembered(
    llm_server: ScriptedLLM, caplog: pytest.LogCaptureFixture
) -> None:
    llm_server.reject = llama_cpp_validation
    llm_server.script(TASK, Reply(content=GOOD))
    judge = make_judge(llm_server, max_concurrency=1)
    with caplog.at_level(logging.INFO, logger="evaluators.judge.client"):
        outcomes = score("context_relevance", SAMPLES, judge)
    assert all(isinstance(o, Score) for o in outcomes)
    kinds = [r.get("response_format", {}).get("type") for r in llm_server.requests]
    # One refused request in the whole process, then llama.cpp's json_object + schema.
    assert kinds == ["json_schema", "json_object", "json_object"]
    assert llm_server.requests[1]["response_format"]["schema"]["properties"]["ratings"]
    assert judge.structured_output_modes() == {"openai/judge-a": "json_object_schema"}
    assert judge.structured_output_fallbacks == {
        ("openai/judge-a", "json_schema", "json_object_schema"): 1
    }
    assert any("refused structured output mode json_schema" in r.message for r in caplog.records)
    assert judge.stats.errors == 0
    # What an operator sees on /metrics.
    registry = CollectorRegistry()
    registry.register(JudgeStateCollector(judge))
    text = generate_latest(registry).decode()
    assert 'ragpulse_judge_concurrency_limit{model="openai/judge-a"} 1.0' in text
    assert (
        'ragpulse_judge_structured_output_mode{mode="json_object_schema",model="openai/judge-a"}'
        " 1.0" in text
    )
    assert (
        'ragpulse_judge_structured_output_fallbacks_total{from_mode="json_schema",'
        'model="openai/judge-a",to_mode="json_object_schema"} 1.0' in text
    )


def test_server_without_any_schema_support_ends_prompt_only(
    llm_server: ScriptedLLM, caplog: pytest.LogCaptureFixture
) -> None:
    def plain_server(body: dict[str, Any]) -> str | None:
        if "response_format" in body:
            return "Unrecognized request argument supplied: response_format"
        if "tools" in body:
            return "tool calling is not supported by this model"
        return None

    llm_server.reject = plain_server
    llm_server.script(TASK, Reply(content=GOOD))
    judge = make_judge(llm_server)
    with caplog.at_level(logging.WARNING, logger="evaluators.judge.client"):
        [outcome] = score("context_relevance", SAMPLES[:1], judge)
    assert isinstance(outcome, Score)
    last = llm_server.requests[-1]
    assert "response_format" not in last and "tools" not in last
    assert judge.structured_output_modes()["openai/judge-a"] == "prompt"
    assert len(llm_server.requests) == 4  # json_schema, json_object_schema, tools, prompt
    assert any("no enforced schema" in r.message for r in caplog.records)


def test_other_bad_requests_are_not_mistaken_for_refusals(llm_server: ScriptedLLM) -> None:
    llm_server.script(TASK, Reply(status=400, content="model 'judge-a' not found"))
    judge = make_judge(llm_server)
    [outcome] = score("context_relevance", SAMPLES[:1], judge)
    assert getattr(outcome, "error_type", None) == "bad_request"
    assert len(llm_server.requests) == 1
    assert judge.structured_output_modes()["openai/judge-a"] == "json_schema"


def test_vllm_gets_guided_json(llm_server: ScriptedLLM) -> None:
    llm_server.script(TASK, Reply(content=GOOD))
    judge = make_judge(llm_server, models=("hosted_vllm/qwen",))
    [outcome] = score("context_relevance", SAMPLES[:1], judge)
    assert isinstance(outcome, Score)
    [body] = llm_server.requests
    assert body["guided_json"]["required"] == ["ratings"]
    assert "response_format" not in body


def test_ollama_format_on_request(llm_server: ScriptedLLM) -> None:
    llm_server.script(TASK, Reply(content=GOOD))
    judge = make_judge(llm_server, structured_output="ollama_format")
    score("context_relevance", SAMPLES[:1], judge)
    [body] = llm_server.requests
    assert body["format"]["required"] == ["ratings"]


def test_tool_call_mode_reads_the_arguments(llm_server: ScriptedLLM) -> None:
    llm_server.script(TASK, Reply(tool_call=GOOD))
    judge = make_judge(llm_server, structured_output="openai/judge-a=tools")
    [outcome] = score("context_relevance", SAMPLES[:1], judge)
    assert isinstance(outcome, Score) and outcome.value == 0.5
    [body] = llm_server.requests
    assert body["tool_choice"]["function"]["name"] == "context_relevance"
    assert body["tools"][0]["function"]["parameters"]["required"] == ["ratings"]


def test_settings_choose_the_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    from collector.settings import Settings

    monkeypatch.setenv("RAGPULSE_JUDGE__MODELS", "openai/a,ollama/b")
    monkeypatch.setenv("RAGPULSE_JUDGE__STRUCTURED_OUTPUT", "openai/a=guided_json")
    config = JudgeConfig.from_settings(Settings().judge)
    setting = parse_setting(config.structured_output)
    assert mode_chain("openai/a", setting, True) == ["guided_json", "prompt"]
    assert mode_chain("ollama/b", setting, False) == ["ollama_format", "prompt"]
    with pytest.raises(ValueError, match="json_schema"):
        JudgeConfig(models=("m",), structured_output="grammar")
    assert set(MODES) >= {"json_schema", "json_object_schema", "tools", "prompt"}
