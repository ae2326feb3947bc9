"""Where judge calls are recorded: the audit trail, the cache and the budget ledger.

`JudgmentStore` is a Protocol so the library can run with `InMemoryJudgmentStore` while the
service uses the SQL implementation in `collector/store/judgments.py`. A successful row is
the cache entry of its `cache_key`: the same model, prompt version, rendered input and
temperature is never paid for twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

STATUS_OK = "ok"
STATUS_ERROR = "error"


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class JudgmentRecord:
    """One HTTP request to a judge model and what came of it."""

    cache_key: str
    metric: str
    model: str
    prompt_version: str
    input_hash: str
    temperature: float
    status: str
    trace_id: str | None = None
    error_type: str | None = None
    output: str | None = None
    parsed: Mapping[str, Any] | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    latency_ms: float | None = None
    created_at: datetime = field(default_factory=utcnow)


@dataclass(frozen=True)
class Usage:
    """Requests sent and dollars spent since some moment (for budgets)."""

    calls: int = 0
    cost_usd: float = 0.0


class JudgmentStore(Protocol):
    async def get(self, cache_key: str) -> Mapping[str, Any] | None:
        """The parsed output of the latest successful call with this key, if any."""
        ...

    async def record(self, record: JudgmentRecord) -> None:
        """Store one call (successful or not)."""
        ...

    async def usage(self, since: datetime) -> Usage:
        """Calls and cost recorded at or after `since`."""
        ...


class InMemoryJudgmentStore:
    """A process-local store for library use and tests (forgotten when the process ends)."""

    def __init__(self) -> None:
        self.records: list[JudgmentRecord] = []
        self._ok: dict[str, Mapping[str, Any]] = {}

    async def get(self, cache_key: str) -> Mapping[str, Any] | None:
        return self._ok.get(cache_key)

    async def record(self, record: JudgmentRecord) -> None:
        self.records.append(record)
        if record.status == STATUS_OK and record.parsed is not None:
            self._ok[record.cache_key] = record.parsed

    async def usage(self, since: datetime) -> Usage:
        calls = 0
        cost = 0.0
        for rec in self.records:
            if rec.created_at >= since:
                calls += 1
                cost += rec.cost_usd or 0.0
        return Usage(calls=calls, cost_usd=cost)
