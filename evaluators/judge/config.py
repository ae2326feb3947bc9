"""Judge configuration as a plain value, so `evaluators` never imports `collector.settings`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evaluators.judge.structured import parse_setting

TRANSPORTS = ("auto", "litellm", "http")
"""How judge requests travel (`evaluators.judge.routing`)."""


@dataclass(frozen=True)
class JudgeConfig:
    """How to reach and pace the judge models.

    `models` are litellm model names ("openai/gpt-4o-mini", "ollama/qwen2.5"); with several,
    every judge metric is the mean over them and each model's value is kept. Budgets are
    rolling: `max_calls_per_hour` over the last hour, `max_usd_per_day` over the last 24 h
    (a reply's cost is known only after it arrives, so requests already in flight may
    overshoot the USD budget by at most `max_concurrency` calls).
    Retries (timeouts, 429, 5xx, connection errors only) wait `backoff_base_s * 2**attempt`
    seconds with full jitter, capped at `backoff_max_s`.

    `max_concurrency` is where each model's concurrency limit starts and its ceiling; with
    `adaptive_concurrency` the limit halves on overload (timeouts, 429, 5xx, or replies
    slower than `slow_fraction * timeout_s`) and grows back on success.
    `structured_output` is "auto" (by litellm provider), a mode for every model, or
    "model=mode,..." pairs; modes are listed in `evaluators.judge.structured.MODES`.
    """

    models: tuple[str, ...]
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    temperature: float = 0.1
    max_concurrency: int = 8
    requests_per_minute: int | None = None
    timeout_s: float = 60.0
    max_retries: int = 4
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    max_calls_per_hour: int | None = None
    max_usd_per_day: float | None = None
    max_tokens: int | None = None
    response_relevancy_questions: int = 3
    response_relevancy_with_question: bool = True
    """Seed 002: the question generator also sees the user's question; False shows it the
    answer alone (RAGAS)."""
    structured_output: str = "auto"
    transport: str = "litellm"
    """"auto", "litellm" or "http": which models skip litellm (`evaluators.judge.routing`)."""
    adaptive_concurrency: bool = True
    slow_fraction: float = 0.8

    def __post_init__(self) -> None:
        if not self.models:
            raise ValueError("JudgeConfig.models: at least one judge model is needed")
        if self.max_concurrency < 1:
            raise ValueError("JudgeConfig.max_concurrency must be >= 1")
        if self.timeout_s <= 0:
            raise ValueError("JudgeConfig.timeout_s must be > 0")
        if self.max_retries < 0:
            raise ValueError("JudgeConfig.max_retries must be >= 0")
        if not 1 <= self.response_relevancy_questions <= 10:
            raise ValueError("JudgeConfig.response_relevancy_questions must be in 1..10")
        if not 0 < self.slow_fraction <= 1:
            raise ValueError("JudgeConfig.slow_fraction must be in (0, 1]")
        parse_setting(self.structured_output)  # unknown modes fail here, not mid-run
        if self.transport not in TRANSPORTS:
            raise ValueError(
                f"JudgeConfig.transport {self.transport!r} is unknown; use {', '.join(TRANSPORTS)}"
            )
        if self.transport == "http" and not self.api_base:
            raise ValueError("JudgeConfig.transport http needs an api_base")

    @classmethod
    def from_settings(cls, settings: Any, **overrides: Any) -> JudgeConfig:
        """Build from any object with the attributes of `collector.settings.JudgeSettings`.

        A pydantic `SecretStr` api key is unwrapped here and kept out of `repr`.
        """
        api_key = getattr(settings, "api_key", None)
        if api_key is not None and hasattr(api_key, "get_secret_value"):
            api_key = api_key.get_secret_value()
        values: dict[str, Any] = {
            "models": tuple(getattr(settings, "models", ()) or ()),
            "api_base": getattr(settings, "api_base", None),
            "api_key": api_key,
        }
        for name in (
            "temperature",
            "max_concurrency",
            "requests_per_minute",
            "timeout_s",
            "max_retries",
            "max_calls_per_hour",
            "max_usd_per_day",
            "response_relevancy_questions",
            "response_relevancy_with_question",
            "max_tokens",
            "structured_output",
            "transport",
            "adaptive_concurrency",
        ):
            if hasattr(settings, name):
                values[name] = getattr(settings, name)
        values.update(overrides)
        return cls(**values)
