"""The traces behind a number: a window's worst-scoring traces, and one trace's scores.

Per-trace outcomes live in `job_outcomes.outcomes` (metric -> number, or
{"skipped": reason} / {"error": type}). The worst traces of a window are read straight
from there, in SQL: the `(job, ts)` index narrows to the window, the metric's value is
taken out of the JSON and only numeric ones are sorted (lowest first for
higher-is-better metrics). On PostgreSQL a 1 h window of a 10M-row table answers in a
few milliseconds (benchmarks/worst_traces.py); without the index, in seconds.

The question and the judge's reasons are fetched afterwards for the N rows shown only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import ColumnElement, Float, String, cast, func, literal, select
from sqlalchemy.orm import Session

from collector.store.judge_reasons import summarize
from collector.store.models import JobOutcome, Judgment, Trace

Order = Literal["lowest", "highest"]


@dataclass(frozen=True, slots=True)
class TraceScore:
    """One trace's outcome of one metric, with what explains it."""

    trace_id: str
    metric: str
    timestamp: datetime
    value: float | None
    """None for a failed evaluation (then `error` says why)."""
    groups: Mapping[str, Any] = field(default_factory=dict)
    slices: Mapping[str, Any] = field(default_factory=dict)
    question: str | None = None
    reason: str | None = None
    error: str | None = None

    @property
    def tenant(self) -> str | None:
        value = self.slices.get("tenant", self.groups.get("tenant"))
        return None if value is None else str(value)

    def as_json(self) -> dict[str, Any]:
        return {
            "trace_id": self.trace_id,
            "metric": self.metric,
            "value": self.value,
            "timestamp": self.timestamp.isoformat(),
            "tenant": self.tenant,
            "reason": self.reason,
            "error": self.error,
            "question": self.question,
            "slices": dict(self.slices) or None,
        }


def _is_sqlite(session: Session) -> bool:
    return session.get_bind().dialect.name == "sqlite"


def number_type(session: Session, column: Any, key: str) -> ColumnElement[str]:
    """The JSON type of `column[key]`, "number" for a number on both back ends."""
    if _is_sqlite(session):
        kind = func.json_type(column, literal(f'$."{key}"'))
        return func.replace(func.replace(kind, "integer", "number"), "real", "number")
    return func.jsonb_typeof(column.op("->")(literal(key)))


def json_number(session: Session, column: Any, key: str) -> ColumnElement[float]:
    """`column[key]` as a float (only meaningful where `number_type` is "number")."""
    if _is_sqlite(session):
        return cast(func.json_extract(column, literal(f'$."{key}"')), Float)
    return cast(column.op("->>")(literal(key)), Float)


def json_text(session: Session, column: Any, key: str) -> ColumnElement[str]:
    """`column[key]` as text (NULL where absent)."""
    if _is_sqlite(session):
        return cast(func.json_extract(column, literal(f'$."{key}"')), String)
    text: ColumnElement[str] = column.op("->>")(literal(key))
    return text


def _error(session: Session, metric: str, key: str = "error") -> ColumnElement[str]:
    """`outcomes[metric][key]` as text: the error type of a failed outcome (NULL where
    none), or with `key="transient"` its mark of waiting for a retry (`jobs/retry.py`)."""
    if _is_sqlite(session):
        return cast(func.json_extract(JobOutcome.outcomes, literal(f'$."{metric}".{key}')), String)
    return JobOutcome.outcomes.op("->")(literal(metric)).op("->>")(literal(key))


def slice_filters(session: Session, where: Mapping[str, str]) -> list[ColumnElement[bool]]:
    """`slice = value` for each item: the slice dimensions, or the group labels of rows
    stored before slices were (tenant is both)."""
    return [
        func.coalesce(
            json_text(session, JobOutcome.slices, key), json_text(session, JobOutcome.groups, key)
        )
        == value
        for key, value in where.items()
    ]


def worst_traces(
    session: Session,
    *,
    jobs: Sequence[str],
    metric: str,
    since: datetime,
    until: datetime,
    limit: int = 20,
    order: Order = "lowest",
    where: Mapping[str, str] | None = None,
    errors: bool = False,
) -> list[TraceScore]:
    """The `limit` traces of `[since, until)` whose `metric` is lowest (or highest), or,
    with `errors`, the newest whose evaluation of it failed for good (not those waiting
    to retry a transient judge failure); filtered by slice values."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    kind = number_type(session, JobOutcome.outcomes, metric)
    query = select(
        JobOutcome.trace_id,
        JobOutcome.ts,
        JobOutcome.groups,
        JobOutcome.slices,
        json_number(session, JobOutcome.outcomes, metric).label("value")
        if not errors
        else _error(session, metric),
    ).where(
        JobOutcome.job.in_(list(jobs)),
        JobOutcome.ts >= since,
        JobOutcome.ts < until,
        *slice_filters(session, where or {}),
    )
    if errors:
        # A transient judge failure waiting for a retry is no error (yet).
        query = query.where(
            kind == "object",
            _error(session, metric).is_not(None),
            _error(session, metric, "transient").is_(None),
        )
        query = query.order_by(JobOutcome.ts.desc())
    else:
        value = json_number(session, JobOutcome.outcomes, metric)
        query = query.where(kind == "number")
        query = query.order_by(value.asc() if order == "lowest" else value.desc(), JobOutcome.ts)
    rows = session.execute(query.limit(limit)).all()
    ids = [r[0] for r in rows]
    questions = _questions(session, ids)
    reasons = judge_reasons(session, ids, metric)
    return [
        TraceScore(
            trace_id=trace_id,
            metric=metric,
            timestamp=ts,
            value=None if errors else float(last),
            groups=groups or {},
            slices=slices or {},
            question=questions.get(trace_id),
            reason=reasons.get(trace_id),
            error=str(last) if errors else None,
        )
        for trace_id, ts, groups, slices, last in rows
    ]


def _questions(session: Session, ids: Sequence[str]) -> dict[str, str]:
    if not ids:
        return {}
    query = select(Trace.trace_id, Trace.question).where(Trace.trace_id.in_(list(ids)))
    return {trace_id: question for trace_id, question in session.execute(query)}


def judge_reasons(session: Session, ids: Sequence[str], metric: str) -> dict[str, str]:
    """trace id -> a one-line account of what the judge said for `metric` (its latest
    calls for that trace), for traces judged; metric `faithfulness@k` reads family calls."""
    if not ids:
        return {}
    family = metric.split("@", 1)[0]
    query = (
        select(Judgment.trace_id, Judgment.parsed, Judgment.status, Judgment.error_type)
        .where(Judgment.trace_id.in_(list(ids)), Judgment.metric == family)
        .order_by(Judgment.id)
    )
    calls: dict[str, list[tuple[Any, str, str | None]]] = {}
    for trace_id, parsed, status, error_type in session.execute(query):
        calls.setdefault(trace_id, []).append((parsed, status, error_type))
    out = {}
    for trace_id, made in calls.items():
        text = summarize(made)
        if text:
            out[trace_id] = text
    return out


@dataclass(frozen=True, slots=True)
class TraceDetail:
    """One stored trace and every outcome the jobs gave it."""

    trace: Trace
    scores: tuple[tuple[str, str, Any], ...]
    """(job, metric, stored outcome: number | {"skipped": ...} | {"error": ...})."""
    reasons: Mapping[str, str]
    """metric family -> what the judge said."""
    slices: Mapping[str, Any]


def trace_detail(session: Session, trace_id: str) -> TraceDetail | None:
    """The trace with `trace_id` and all its scores, or None if it is not stored."""
    trace = session.execute(select(Trace).where(Trace.trace_id == trace_id)).scalar_one_or_none()
    if trace is None:
        return None
    rows = session.execute(
        select(JobOutcome.job, JobOutcome.outcomes, JobOutcome.slices)
        .where(JobOutcome.trace_id == trace_id)
        .order_by(JobOutcome.job)
    ).all()
    scores = tuple(
        (job, metric, outcome)
        for job, outcomes, _ in rows
        for metric, outcome in sorted((outcomes or {}).items())
    )
    slices: dict[str, Any] = {}
    for _, _, row_slices in rows:
        slices.update(row_slices or {})
    families = sorted({metric.split("@", 1)[0] for _, metric, _ in scores})
    reasons = {}
    for family in families:
        said = judge_reasons(session, [trace_id], family).get(trace_id)
        if said:
            reasons[family] = said
    return TraceDetail(trace, scores, reasons, slices)
