"""The LLM judge (`judge`): its models and endpoint, concurrency, retries, budgets,
how its JSON answers are enforced and the agreement alert on human labels."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr, field_validator

from collector.settings.fields import CSV, Group, split_csv


class JudgeSettings(Group):
    models: CSV = []
    """Judge models (litellm names, e.g. openai/gpt-4o-mini); empty: the judge metrics are
    skipped."""
    api_base: str | None = None
    """Base URL of the judge's OpenAI-compatible endpoint (self-hosted or proxy)."""
    api_key: SecretStr | None = None
    """API key sent to the judge endpoint."""
    temperature: float = Field(0.1, ge=0.0, le=2.0)
    """Sampling temperature of judge calls (low: repeatable judgments)."""
    max_concurrency: int = Field(8, ge=1)
    """Judge calls in flight per model."""
    requests_per_minute: int | None = Field(None, ge=1)
    """Cap on judge calls a minute per model (unset: no cap)."""
    timeout_s: float = Field(60.0, gt=0)
    """Timeout of one judge call, in seconds."""
    max_retries: int = Field(4, ge=0)
    """Retries of a failed judge call within one job run (with backoff)."""
    transient_retries: int = Field(3, ge=0, le=100)
    """Later job runs that retry a trace whose judge calls failed transiently (timeout,
    429, 5xx, connection) after max_retries; the trace waits meanwhile (not an error) and
    the failure after the last retry is recorded as an error. 0: recorded at once."""
    max_calls_per_hour: int | None = Field(None, ge=0)
    """Budget: judge calls in any rolling hour; calls beyond it are refused (unset: no cap)."""
    max_usd_per_day: float | None = Field(None, ge=0)
    """Budget: judge spend in USD over any rolling 24 hours; calls beyond it are refused
    (calls in flight may overshoot it; unset: no cap)."""
    consistency_delta: float = Field(0.5, ge=0)
    """judge_consistency: re-judged scores of one input within this of each other count as
    consistent."""
    min_agreement: float = Field(0.4, ge=-1.0, le=1.0)
    """The agreement alert fires when the judge's main agreement statistic with human
    labels (kappa; Spearman on continuous scales) over 7d is below this (0.4: "fair")."""
    min_agreement_pairs: int = Field(30, ge=2)
    """...and at least this many labelled pairs back it (fewer are too noisy to page on)."""
    response_relevancy_questions: int = Field(3, ge=1, le=10)
    """response_relevancy: questions generated from each answer (N)."""
    response_relevancy_with_question: bool = True
    """Seed 002: response_relevancy's question generator sees the user's question too
    (keeps its scope and style); false shows it the answer alone, as RAGAS does."""
    max_tokens: int | None = Field(None, ge=1)
    """Cap on each judge reply's tokens (bounds a small model that loops inside a list)."""
    structured_output: str = "auto"
    """How the answer's JSON schema is enforced: auto (by litellm provider, falling back
    when a server refuses), or json_schema | json_object_schema (llama.cpp) | guided_json
    (vLLM/SGLang) | ollama_format | tools | prompt, for every model or as model=mode,..."""
    transport: Literal["auto", "litellm", "http"] = "litellm"
    """litellm (default): every model through litellm, the judge component the SPEC
    names; auto: an openai/<model> at api_base (a self-hosted or proxied OpenAI-compatible
    server) is posted to straight, skipping litellm's ~4 ms of CPU per call (the judge's
    throughput at 32 calls in flight), every other model through litellm; http: always
    straight to api_base (needs it)."""
    adaptive_concurrency: bool = True
    """Halve a model's concurrency on timeouts/429/5xx, grow it back on success (starts
    at and never exceeds max_concurrency); exported as ragpulse_judge_concurrency_limit."""

    _csv = field_validator("models", mode="before")(split_csv)

    @field_validator("structured_output")
    @classmethod
    def _structured_output(cls, value: str) -> str:
        from evaluators.judge.structured import parse_setting

        parse_setting(value)
        return value
