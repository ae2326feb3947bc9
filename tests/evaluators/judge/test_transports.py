"""Which transport carries a judge model's requests, and what the straight HTTP one sends
and makes of failures (the client's behaviour through both is tested in test_client.py)."""

from __future__ import annotations

import asyncio

import pytest

from evaluators.judge import JudgeConfig
from evaluators.judge.api import ascore
from evaluators.judge.errors import (
    JudgeConnectionError,
    JudgeRateLimited,
    JudgeRefusal,
    JudgeRequestError,
    JudgeServerError,
    JudgeTimeout,
)
from evaluators.judge.openai_http import (
    HttpStatusError,
    InvalidResponseError,
    OpenAIHttpTransport,
    map_http_exception,
    request_body,
)
from evaluators.judge.routing import Transports, goes_direct
from evaluators.judge.transport import LiteLLMTransport
from evaluators.outcome import Score
from tests.evaluators.judge.helpers import make_judge, sample
from tests.fixtures.llm_server import Reply, ScriptedLLM

BASE = "http://127.0.0.1:1/v1"


def test_auto_sends_openai_models_at_an_api_base_straight_and_the_rest_through_litellm() -> None:
    assert not goes_direct(JudgeConfig(models=("m",), api_base=BASE), "openai/x")  # default
    auto = JudgeConfig(models=("m",), api_base=BASE, transport="auto")
    assert goes_direct(auto, "openai/qwen2.5-7b")
    assert not goes_direct(auto, "hosted_vllm/qwen2.5-7b")
    assert not goes_direct(auto, "ollama_chat/qwen2.5")
    assert not goes_direct(JudgeConfig(models=("m",), transport="auto"), "openai/gpt-4o-mini")
    assert not goes_direct(
        JudgeConfig(models=("m",), api_base=BASE, transport="litellm"), "openai/x"
    )
    assert goes_direct(JudgeConfig(models=("m",), api_base=BASE, transport="http"), "vllm/x")
    transports = Transports(auto)
    assert isinstance(transports.of("openai/x"), OpenAIHttpTransport)
    assert isinstance(transports.of("hosted_vllm/x"), LiteLLMTransport)


def test_transport_setting_is_checked() -> None:
    with pytest.raises(ValueError, match="unknown"):
        JudgeConfig(models=("m",), transport="grpc")
    with pytest.raises(ValueError, match="api_base"):
        JudgeConfig(models=("m",), transport="http")


def test_request_body_is_what_litellm_posts() -> None:
    config = JudgeConfig(models=("m",), api_base=BASE, temperature=0.2, max_tokens=300)
    messages = [{"role": "user", "content": "q"}]
    fields = {
        "extra_body": {"guided_json": {"type": "object"}},
        "tools": [{"type": "function"}],
        "_skip_mcp_handler": True,
    }
    assert request_body(config, "openai/org/model-7b", messages, fields) == {
        "model": "org/model-7b",
        "messages": messages,
        "temperature": 0.2,
        "max_tokens": 300,
        "guided_json": {"type": "object"},
        "tools": [{"type": "function"}],
    }


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        (HttpStatusError(429, "slow down"), JudgeRateLimited),
        (HttpStatusError(408, "request timeout"), JudgeTimeout),
        (HttpStatusError(504, "gateway timeout"), JudgeTimeout),
        (HttpStatusError(500, "boom"), JudgeServerError),
        (HttpStatusError(503, "overloaded"), JudgeServerError),
        (HttpStatusError(400, "content_policy_violation: flagged"), JudgeRefusal),
        (HttpStatusError(400, "response_format is not supported"), JudgeRequestError),
        (HttpStatusError(401, "bad key"), JudgeRequestError),
        (TimeoutError(), JudgeTimeout),
        (ConnectionRefusedError(111, "Connection refused"), JudgeConnectionError),
        (InvalidResponseError("the reply is not JSON"), JudgeServerError),
    ],
)
def test_failures_map_to_the_typed_errors_of_litellm_s_exceptions(
    failure: Exception, expected: type[Exception]
) -> None:
    assert type(map_http_exception(failure)) is expected


def test_status_error_keeps_the_server_message_for_mode_fallbacks() -> None:
    error = HttpStatusError(400, "response_format type json_schema is not supported")
    assert error.status_code == 400 and "json_schema" in str(error)


def test_each_loop_gets_a_session_closed_when_the_loop_ends(llm_server: ScriptedLLM) -> None:
    llm_server.script("ragpulse judge task: context_relevance", Reply(content=GOOD))
    judge = make_judge(llm_server)
    transport = judge._transports.of("openai/judge-a")
    assert isinstance(transport, OpenAIHttpTransport)

    async def one(question: str) -> tuple[object, object]:
        [outcome] = await ascore("context_relevance", [sample(question, ["a", "b"])], judge)
        return outcome, transport._sessions[asyncio.get_running_loop()]

    sessions = []
    for question in ("q1?", "q2?"):  # a new event loop, and a new session, for each run
        outcome, session = asyncio.run(one(question))
        assert isinstance(outcome, Score)
        sessions.append(session)
    assert sessions[0] is not sessions[1]
    assert all(s.closed for s in sessions)  # type: ignore[attr-defined]
    assert transport._sessions == {}
    assert len(llm_server.requests) == 2


GOOD = {"ratings": [{"context": 1, "score": 2}, {"context": 2, "score": 0}]}
