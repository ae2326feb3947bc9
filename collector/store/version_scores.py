"""Per-trace scores of one version over a window, and the versions the store has seen.

A trace's version is its `version` slice (`job_outcomes.slices`, or the group label of
rows stored before slices were): what `ragpulse compare --a/--b` and the canary job
compare. A trace has a row per job that scored it; its scores are merged over the jobs
asked for, keeping numbers only (a skipped or failed evaluation is no score). The
question and the trace's `question_id` tag come along: two versions that answered the
same question (shadow or replay traffic) are compared pairwise on it.

The production judge's accuracy, precision and recall are computed over whole windows
(from a confusion matrix), so no job stores them per trace; their per-trace form
(`evaluators.classification.DECISION_SCORES`) is read from the trace's own
`judge_decision` and `judge_label`, for the traces the jobs asked for scored (the
judge_pipeline job scores every labelled trace): the mean over a version's traces is the
value the report shows for that version and window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from collector.store.models import JobOutcome, Trace
from collector.store.worst import json_text, slice_filters
from evaluators.classification import DECISION_SCORES

VERSION = "version"
PAIR_TAG = "question_id"
"""A trace tag naming the question it answers (replays): pairs on it before the text."""


@dataclass(frozen=True, slots=True)
class VersionSeen:
    version: str
    first_seen: datetime
    last_seen: datetime
    traces: int


@dataclass(frozen=True, slots=True)
class ScoredTrace:
    trace_id: str
    pair_key: str | None
    """The trace's `question_id` tag, else its question text (normalised by the caller)."""
    scores: dict[str, float] = field(default_factory=dict)


def _version(session: Session) -> Any:
    return func.coalesce(
        json_text(session, JobOutcome.slices, VERSION),
        json_text(session, JobOutcome.groups, VERSION),
    )


def versions_seen(
    session: Session, *, jobs: Sequence[str], since: datetime, until: datetime
) -> list[VersionSeen]:
    """Each version with scored traces in `[since, until)`: when it was first and last
    seen there and how many traces it has, first seen first."""
    version = _version(session).label("version")
    rows = session.execute(
        select(
            version,
            func.min(JobOutcome.ts),
            func.max(JobOutcome.ts),
            func.count(func.distinct(JobOutcome.trace_id)),
        )
        .where(JobOutcome.job.in_(list(jobs)), JobOutcome.ts >= since, JobOutcome.ts < until)
        .where(version.is_not(None))
        .group_by(version)
    ).all()
    found = [VersionSeen(str(v), first, last, int(n)) for v, first, last, n in rows]
    return sorted(found, key=lambda s: (s.first_seen, s.version))


def version_scores(
    session: Session,
    *,
    jobs: Sequence[str],
    metrics: Sequence[str],
    version: str,
    since: datetime,
    until: datetime,
) -> list[ScoredTrace]:
    """The numeric scores of `metrics` of every trace of `version` in `[since, until)`,
    in time order (traces without any of them are left out)."""
    wanted = set(metrics)
    derived = {m: DECISION_SCORES[m] for m in metrics if m in DECISION_SCORES}
    query = (
        select(
            JobOutcome.trace_id,
            JobOutcome.outcomes,
            Trace.question,
            Trace.tags,
            Trace.judge_decision,
            Trace.judge_label,
        )
        .join(Trace, Trace.trace_id == JobOutcome.trace_id)
        .where(JobOutcome.job.in_(list(jobs)), JobOutcome.ts >= since, JobOutcome.ts < until)
        # an outcome's ts is its trace's timestamp: the bound lets PostgreSQL read only the
        # window's partitions of `traces`
        .where(Trace.timestamp >= since, Trace.timestamp < until)
        .where(*slice_filters(session, {VERSION: version}))
        .order_by(JobOutcome.ts, JobOutcome.trace_id)
    )
    merged: dict[str, ScoredTrace] = {}
    for trace_id, outcomes, question, tags, decision, label in session.execute(query):
        scores = {
            name: float(value)
            for name, value in (outcomes or {}).items()
            if name in wanted and isinstance(value, int | float) and not isinstance(value, bool)
        }
        if derived and decision is not None and label is not None:
            for name, score in derived.items():
                value = score(bool(decision), bool(label))
                if value is not None:
                    scores[name] = value
        found = merged.get(trace_id)
        if found is None:
            tag = (tags or {}).get(PAIR_TAG)
            key = str(tag) if tag is not None and str(tag).strip() else question
            merged[trace_id] = ScoredTrace(trace_id, key, scores)
        else:
            found.scores.update(scores)
    return [t for t in merged.values() if t.scores]
