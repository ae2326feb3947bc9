"""The structured-output mode each judge model is asked in now, and moving on when refused.

`structured.py` says which modes exist and in which order to try them; this keeps, per
model, the modes still left (chosen on first use, asking the transport whether the
provider takes OpenAI's json_schema when the setting is "auto"). A server refusing the
current mode moves its model to the next one for the rest of the process: logged once,
counted in `fallbacks`.
"""

from __future__ import annotations

import logging
from typing import Protocol

from evaluators.judge import structured
from evaluators.judge.errors import JudgeError, JudgeRequestError, JudgeServerError

# Logged under the client's name, as before these steps had modules of their own.
logger = logging.getLogger("evaluators.judge.client")


class SchemaSupport(Protocol):
    def supports_response_schema(self, model: str) -> bool:
        """Whether the provider of `model` takes OpenAI's json_schema response format."""
        ...


class StructuredModes:
    """Per model, the structured-output modes left to try, the current one first."""

    def __init__(self, setting: str, support: SchemaSupport) -> None:
        self._setting = structured.parse_setting(setting)
        self._support = support
        self._chains: dict[str, list[str]] = {}
        self.fallbacks: dict[tuple[str, str, str], int] = {}
        """(model, refused mode, next mode) -> times a server refused (once per model)."""

    def current(self, model: str) -> str:
        """The mode `model` is asked in now."""
        return self._chain(model)[0]

    def _chain(self, model: str) -> list[str]:
        chain = self._chains.get(model)
        if chain is None:
            supports = False
            auto = self._setting.get(model, self._setting["*"]) == structured.AUTO
            try:
                if auto:
                    supports = self._support.supports_response_schema(model)
            except Exception:
                supports = False
            chain = structured.mode_chain(model, self._setting, supports)
            self._chains[model] = chain
        return chain

    def move_on(
        self, model: str, mode: str, error: JudgeError, status: int | None, message: str
    ) -> bool:
        """Whether to send the request again in another mode: True when `error` (HTTP
        `status`, raw `message`) is the server refusing `mode` and a mode is left."""
        return (
            isinstance(error, JudgeRequestError | JudgeServerError)
            and structured.refuses(mode, status, message)
            and self._fall_back(model, mode, error)
        )

    def _fall_back(self, model: str, mode: str, error: JudgeError) -> bool:
        """Drop `mode` for `model` after its server refused it; False when nothing is left."""
        chain = self._chain(model)
        if chain[0] != mode:
            return True  # another request already moved on
        if len(chain) == 1:
            return False
        chain.pop(0)
        key = (model, mode, chain[0])
        self.fallbacks[key] = self.fallbacks.get(key, 0) + 1
        log = logger.warning if chain[0] == "prompt" else logger.info
        log(
            "judge model %s: the server refused structured output mode %s (%s); using %s "
            "from now on%s",
            model,
            mode,
            str(error)[:200],
            chain[0],
            " (no enforced schema: a small model may answer malformed JSON)"
            if chain[0] == "prompt"
            else "",
        )
        return True
