"""Per-topic signals of what the corpus fails to give, read for the knowledge-gap list.

For every trace of a window that the `topics` job gave a topic, the signals of
`evaluators.topics.gaps`: the per-trace outcomes the jobs stored in `job_outcomes`
(`retrieval_health`: retrieval_empty_rate; `real_users_benchmark`: hit_rate@5, where the
trace has ground truth; `rag_quality`: context_relevance and faithfulness, where judged;
`sessions`: turn_re_asked, where the answer was followed by a re-ask in its session)
and whether the answer's start says it does not know (`evaluators.topics.no_answer`,
from the first `HEAD_CHARS` of `traces.answer`, cut in SQL). A metric a trace did not
measure (skipped, failed, waiting for a retry, or its job not run) is left out for it.

Traces are read a page of `PAGE` at a time by trace id (keyset), with their outcomes
fetched by the page's ids, and added up per topic (`GapTally`): memory is a page plus the
topics, whatever the traffic; the same queries on SQLite and PostgreSQL. Cost: three
short queries per page of 1,000 traces.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from collector.jobs.catalog import rag_quality, real_users_benchmark, retrieval_health, sessions
from collector.jobs.outcomes.codec import SCORED, kind_of
from collector.store.models import JobOutcome, Trace, TraceTopic
from evaluators.topics.gaps import EXAMPLES, Gap, GapTally
from evaluators.topics.no_answer import HEAD_CHARS, says_no_answer

PAGE = 1000
NO_ANSWER = "no_answer_rate"
SOURCES: Mapping[str, tuple[str, ...]] = {
    retrieval_health.NAME: ("retrieval_empty_rate",),
    real_users_benchmark.NAME: ("hit_rate@5",),
    rag_quality.NAME: ("context_relevance", "faithfulness"),
    sessions.NAME: ("turn_re_asked",),
}
"""The job storing each signal's per-trace outcomes -> those signals (metric names)."""


def _outcomes(
    session: Session, ids: Sequence[str], since: datetime, until: datetime
) -> dict[str, dict[str, float]]:
    """trace_id -> signal -> its scored value, for the traces `ids`."""
    query = select(JobOutcome.trace_id, JobOutcome.job, JobOutcome.outcomes).where(
        JobOutcome.job.in_(list(SOURCES)),
        JobOutcome.trace_id.in_(list(ids)),
        JobOutcome.ts >= since,
        JobOutcome.ts < until,
    )
    out: dict[str, dict[str, float]] = {}
    for trace_id, job, outcomes in session.execute(query):
        stored: Mapping[str, Any] = outcomes or {}
        for metric in SOURCES.get(job, ()):
            value = stored.get(metric)
            if value is not None and kind_of(value) == (SCORED, ""):
                out.setdefault(trace_id, {})[metric] = float(value)
    return out


def topic_gaps(
    session: Session,
    since: datetime,
    until: datetime,
    *,
    page: int = PAGE,
    examples: int = EXAMPLES,
) -> list[Gap]:
    """The knowledge-gap list of the traces with a timestamp in [since, until) that have
    a topic, ranked (`evaluators.topics.gaps`): every topic that measured anything."""
    if page < 1:
        raise ValueError(f"page must be at least 1, got {page}")
    tally = GapTally(examples)
    after = ""
    while True:
        rows = session.execute(
            select(
                TraceTopic.trace_id,
                TraceTopic.topic_id,
                Trace.question,
                func.substr(Trace.answer, 1, HEAD_CHARS),
            )
            .join(Trace, Trace.trace_id == TraceTopic.trace_id)
            .where(
                TraceTopic.topic_id.is_not(None),
                TraceTopic.trace_id > after,
                Trace.timestamp >= since,
                Trace.timestamp < until,
            )
            .order_by(TraceTopic.trace_id)
            .limit(page)
        ).all()
        if not rows:
            break
        values = _outcomes(session, [r[0] for r in rows], since, until)
        for trace_id, topic, question, answer in rows:
            measured = dict(values.get(trace_id, {}))
            if answer:
                measured[NO_ANSWER] = float(says_no_answer(answer))
            tally.add(int(topic), measured, question)
        if len(rows) < page:
            break
        after = str(rows[-1][0])
    return tally.gaps()
