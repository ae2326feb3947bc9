"""Which transport carries each judge model's requests: straight HTTP or litellm.

The `transport` setting: "auto" (the default) sends `openai/<model>` with an `api_base` (a
self-hosted or proxied OpenAI-compatible server) straight to it (`openai_http`), and every
other model through litellm (`transport`), which knows how to reach each provider;
"litellm" sends everything through litellm, "http" everything straight to `api_base` (the
model name without its provider prefix).
"""

from __future__ import annotations

from evaluators.judge.config import JudgeConfig
from evaluators.judge.openai_http import OpenAIHttpTransport
from evaluators.judge.structured import provider_of
from evaluators.judge.transport import LiteLLMTransport, Transport

DIRECT_PROVIDERS = frozenset({"openai"})
"""Providers whose models "auto" sends straight to `api_base`: litellm only relays them."""


def goes_direct(config: JudgeConfig, model: str) -> bool:
    """Whether `model`'s requests skip litellm under `config.transport`."""
    if not config.api_base or config.transport == "litellm":
        return False
    return config.transport == "http" or provider_of(model) in DIRECT_PROVIDERS


class Transports:
    """One transport of each kind, made on first use, and the one each model takes."""

    def __init__(self, config: JudgeConfig) -> None:
        self.config = config
        self._litellm: LiteLLMTransport | None = None
        self._http: OpenAIHttpTransport | None = None

    def of(self, model: str) -> Transport:
        """The transport `model`'s requests go through."""
        if goes_direct(self.config, model):
            if self._http is None:
                self._http = OpenAIHttpTransport(self.config)
            return self._http
        if self._litellm is None:
            self._litellm = LiteLLMTransport(self.config)
        return self._litellm

    def supports_response_schema(self, model: str) -> bool:
        """Whether the provider of `model` takes OpenAI's json_schema response format."""
        return self.of(model).supports_response_schema(model)
