"""Small builders shared by the judge tests."""

from __future__ import annotations

from typing import Any

from evaluators.judge import JudgeClient, JudgeConfig, JudgmentStore
from evaluators.sample import Context, Sample
from tests.fixtures.llm_server import ScriptedLLM

MODEL = "openai/judge-a"
TRANSPORT = "auto"
"""The judge transport `make_judge` asks for (test modules run their cases under each)."""


def make_judge(
    server: ScriptedLLM,
    models: tuple[str, ...] = (MODEL,),
    store: JudgmentStore | None = None,
    **overrides: Any,
) -> JudgeClient:
    """A client for the scripted server: quick backoff and timeouts so tests stay fast."""
    values: dict[str, Any] = {
        "models": models,
        "api_base": server.base_url,
        "api_key": "dummy-key",
        "timeout_s": 5.0,
        "max_retries": 2,
        "backoff_base_s": 0.001,
        "backoff_max_s": 0.01,
        "transport": TRANSPORT,
    }
    values.update(overrides)
    return JudgeClient(JudgeConfig(**values), store)


def sample(
    question: str,
    contexts: list[str] | None = None,
    *,
    answer: str | None = None,
    reference: str | None = None,
    trace_id: str = "t1",
) -> Sample:
    return Sample(
        trace_id=trace_id,
        question=question,
        answer=answer,
        reference=reference,
        contexts=tuple(Context(id=f"d{i}", text=t) for i, t in enumerate(contexts or [])),
    )
