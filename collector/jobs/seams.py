"""What the jobs use of the things the service hands them, as types.

A job is given an LLM judge and a stored-trace -> `Sample` mapper (`JobEnvironment`);
the jobs and the metrics they run rely only on the members declared here, so the real
`evaluators.judge.client.JudgeClient`, another client or a test double all fit. The
embedder's type is the evaluators' own `evaluators.embedder.TextEncoder` (what the
metrics call on it) and the results' is `publish.ResultsSink`; neither is repeated here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from sqlalchemy import Row

from collector.store.models import Trace
from evaluators.sample import Sample

if TYPE_CHECKING:
    from evaluators.judge.config import JudgeConfig
    from evaluators.judge.prompts.base import Prompt
    from evaluators.judge.reply import Check
    from evaluators.judge.store import JudgmentStore

StoredTrace: TypeAlias = Trace | Row[Any]
"""A stored trace as the jobs read it: a `Trace`, or a row of `trace_rows.SAMPLE_COLUMNS`
(the same attribute names, fetched without the ORM)."""

SampleMapper: TypeAlias = Callable[[StoredTrace], Sample]
"""Maps a stored trace to the `Sample` the metrics read (`collector.store.samples`)."""


class Judge(Protocol):
    """An LLM judge as the jobs and the judge metrics use it (`JudgeClient`).

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
