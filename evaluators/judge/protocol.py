"""`Judge`: what the judge metrics (and the service's jobs) use of an LLM judge.

`JudgeClient` is the implementation; the protocol is the seam, so a metric, the runner or
a job is typed against these members only and a test double or another client fits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from evaluators.judge.config import JudgeConfig
    from evaluators.judge.prompts.base import Prompt
    from evaluators.judge.reply import Check
    from evaluators.judge.store import JudgmentStore


class Judge(Protocol):
    """An LLM judge as the judge metrics and the jobs use it (`JudgeClient`).

    The metrics ask each of its `models` (`ask`); `judge_consistency` builds an uncached
    twin of it from its `config` and `store`. Its optional `signature(metric)` and
    `stats` are looked up by the evaluators' runner when present.
    """

    @property
    def models(self) -> Sequence[str]: ...

    @property
    def config(self) -> JudgeConfig: ...

    @property
    def store(self) -> JudgmentStore: ...

    async def ask(
        self,
        prompt: Prompt,
        user: str,
        *,
        model: str,
        metric: str,
        trace_id: str | None = None,
        check: Check | None = None,
        schema: Mapping[str, Any] | None = None,
    ) -> Any:
        """Validated JSON answer of `model` to `prompt` on `user`."""
        ...
