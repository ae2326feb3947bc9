"""What each judge request leaves in the judgment store.

Every HTTP request is recorded, failed ones too (with the reply when the server answered),
so the store is the audit trail, the cache (its successful rows) and the budget ledger.
All requests for one judgment (retries, the repair) share its `RequestMeta`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evaluators.judge.errors import JudgeError
from evaluators.judge.reply import Reply
from evaluators.judge.store import JudgmentRecord


@dataclass(frozen=True)
class RequestMeta:
    """Which judgment a request belongs to."""

    cache_key: str
    metric: str
    model: str
    prompt_version: str
    input_hash: str
    temperature: float
    trace_id: str | None


def judgment_record(
    meta: RequestMeta,
    status: str,
    error: JudgeError | None,
    reply: Reply | None,
    parsed: Any = None,
) -> JudgmentRecord:
    """The record of one request: its judgment, outcome, reply, tokens, cost, latency."""
    return JudgmentRecord(
        cache_key=meta.cache_key,
        metric=meta.metric,
        model=meta.model,
        prompt_version=meta.prompt_version,
        input_hash=meta.input_hash,
        temperature=meta.temperature,
        trace_id=meta.trace_id,
        status=status,
        error_type=error.error_type if error is not None else None,
        output=reply.text if reply is not None else None,
        parsed=parsed if isinstance(parsed, dict) else None,
        prompt_tokens=reply.prompt_tokens if reply is not None else None,
        completion_tokens=reply.completion_tokens if reply is not None else None,
        cost_usd=reply.cost_usd if reply is not None else 0.0,
        latency_ms=reply.latency_ms if reply is not None else None,
    )
