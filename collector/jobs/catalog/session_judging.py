"""The sessions job's judged outcome: which closed sessions the LLM judge rates, and how.

Issue 42 item 3. With a judge configured, a closed session is judged when its session id
is sampled (`sampled`: the first 8 bytes of `sha256("session_judge:" + session_id)` below
`sessions.judge_rate * 2**64`, the scheme of the traces' sampling in
`collector.ingest.sampling` with a purpose of its own, so every replica and replay picks the
same sessions). Its completeness and frustration (`evaluators.conversations.judged`) are
stored on the session's first turn's row beside the session metrics, for the session's
version: a reopened session is stored anew and so judged again, once.

A sampled session stored without them is owed a judgment (`owed`): it was closed while the
run's budget (`sessions.judge_per_run`) was spent, before a judge was configured, or its
judge calls failed transiently and wait for a retry (the cursor's `RetryPolicy` marker,
`collector.jobs.outcomes.retry`). Finding them reads the job's first-turn rows of the
look-back (one scan of the job's rows since then, by the index on job and ts).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Text, not_, or_, select
from sqlalchemy import cast as sql_cast
from sqlalchemy.orm import Session

from collector.jobs.outcomes.codec import MARKER_PATTERN, read_outcomes
from collector.jobs.outcomes.retry import Waiting, waiting_of
from collector.jobs.recording.cursor import epoch
from collector.store.models import JobOutcome, Trace
from evaluators.conversation_metrics import (
    SESSION_COMPLETENESS,
    SESSION_FRUSTRATION,
    SESSION_RESOLVED,
)
from evaluators.conversations import Turn
from evaluators.conversations.judged import JudgedOutcome, judge_session, prompt_hash
from evaluators.judge.protocol import Judge
from evaluators.outcome import Outcome
from evaluators.signature import Signature

PURPOSE = "session_judge"
_SCALE = 2**64


def sampled(session_id: str, rate: float) -> bool:
    """True when the session is in the judge's sample at `rate` (module docstring)."""
    if rate <= 0.0:
        return False
    if rate >= 1.0:
        return True
    digest = hashlib.sha256(f"{PURPOSE}:{session_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") < int(rate * _SCALE)


def owed(
    session: Session, job: str, since: datetime, rate: float
) -> tuple[dict[str, str], dict[str, Waiting]]:
    """The sampled sessions of `since` or later stored without a final judged outcome:
    session id -> its first trace id, and first trace id -> what waits for a retry."""
    text = sql_cast(JobOutcome.outcomes, Text)
    query = (
        select(JobOutcome.trace_id, JobOutcome.trace_updated_at, text, Trace.session_id)
        .join(Trace, Trace.trace_id == JobOutcome.trace_id)
        .where(
            JobOutcome.job == job,
            JobOutcome.ts >= since,
            Trace.timestamp >= since,
            text.like(f'%"{SESSION_RESOLVED}"%'),
            or_(not_(text.like(f'%"{SESSION_COMPLETENESS}"%')), text.like(MARKER_PATTERN)),
        )
    )
    first: dict[str, str] = {}
    waiting: dict[str, Waiting] = {}
    for trace_id, updated, outcomes, sid in session.execute(query):
        if sid is None or not sampled(sid, rate):
            continue
        first[sid] = trace_id
        found = waiting_of(epoch(updated), read_outcomes(outcomes))
        if found is not None:
            waiting[trace_id] = found
    return first, waiting


def judge_all(judge: Judge, sessions: Sequence[Sequence[Turn]]) -> list[JudgedOutcome]:
    """Judge `sessions` together under one event loop (the judge's semaphore bounds the
    calls in flight; its cache answers a transcript it has judged before)."""
    if not sessions:
        return []

    async def every() -> list[JudgedOutcome]:
        return list(await asyncio.gather(*(judge_session(judge, turns) for turns in sessions)))

    return asyncio.run(every())


def judged_outcomes(found: JudgedOutcome) -> dict[str, Outcome]:
    """The stored metrics of a judged outcome."""
    return {SESSION_COMPLETENESS: found.completeness, SESSION_FRUSTRATION: found.frustration}


def judged_signature(judge: Judge | None) -> Signature:
    """How the judged metrics are made: the judge models and the prompts of both
    languages (a session is judged with its users' language's)."""
    models = ",".join(judge.models) if judge is not None else None
    return Signature(judge_model=models or None, prompt_hash=prompt_hash())
