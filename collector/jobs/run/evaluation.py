"""Scoring a run's new traces with a job's per-sample metrics.

A job's metrics are resolved once and split by kind (`JobMetrics`): per-sample ones are
scored here, trace by trace, and kept as outcomes; dataset ones are computed over whole
windows (`dataset.py`). New traces are fetched as light rows (only the columns the
metrics read, `trace_rows`) and mapped to `Sample`s; metrics that look at a user's
earlier questions (UX) get the candidates of the look-back before them as context:
evaluated with the new traces, not scored again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Row, Select, select
from sqlalchemy.orm import Session

from collector.jobs.recording.cursor import epoch, version_s
from collector.jobs.run.definition import JobDefinition, JobEnvironment
from collector.jobs.traces.candidates import requests
from collector.jobs.traces.trace_rows import SampleMemo, sample_rows
from collector.store.bulk import is_postgresql
from collector.store.id_filter import joined_ids, unprepared
from collector.store.models import Trace
from evaluators.outcome import Failed, Outcome, Score, Skipped
from evaluators.registry import EvalContext, ResolvedMetric, resolve
from evaluators.runner import signature_for
from evaluators.sample import Sample
from evaluators.signature import Signature

_CHUNK = 1000
_ARRAY_CHUNK = 20_000
_CONTEXT_CAP = 20_000


def sample_fields(metrics: Iterable[ResolvedMetric]) -> frozenset[str] | None:
    """The `Sample` fields the metrics read (`MetricSpec.reads`); None when one of them
    does not say, or there are none."""
    reads = [m.spec.reads for m in metrics]
    if not reads or any(r is None for r in reads):
        return None
    return frozenset().union(*(r for r in reads if r is not None))


@dataclass(frozen=True)
class JobMetrics:
    """A job's metrics, resolved: scored per sample, or computed over a dataset."""

    per_sample: list[ResolvedMetric]
    dataset: list[ResolvedMetric]
    fields: frozenset[str] | None
    """The `Sample` fields any of them reads (`sample_fields`)."""

    @classmethod
    def resolve(cls, names: Iterable[str]) -> JobMetrics:
        resolved = [resolve(m) for m in names]
        return cls(
            per_sample=[m for m in resolved if m.spec.kind != "dataset"],
            dataset=[m for m in resolved if m.spec.kind == "dataset"],
            fields=sample_fields(resolved),
        )


def eval_context(env: JobEnvironment) -> EvalContext:
    """What the metrics may use besides the samples: the job's embedder, judge, options."""
    return EvalContext(embedder=env.embedder, judge=env.judge, options=env.options.metric_options)


def signature(metric: ResolvedMetric, env: JobEnvironment) -> Signature:
    """How `metric`'s values are made with the job's embedder, judge and options: the
    evaluators' own rule (`evaluators.runner.signature_for`), so a scheduled result and
    `ragpulse evaluate` stamp the same judge models, prompt hash and embedding model, and
    values made differently are never compared as if alike."""
    return signature_for(metric, eval_context(env))


def judge_unreachable(outcomes: Mapping[str, Sequence[Outcome]]) -> bool:
    """True when the judge answered nothing: some outcome failed to connect, none has a
    value and no other failure happened. Such a run measured nothing, so its traces must
    stay pending rather than be recorded as judged; an outage does not use up the traces'
    retries of transient failures (`retry.py`), which cover the runs where some calls
    failed."""
    flat = [o for per_metric in outcomes.values() for o in per_metric]
    failures = [o for o in flat if isinstance(o, Failed)]
    return (
        bool(failures)
        and not any(isinstance(o, Score) for o in flat)
        and all(f.error_type == "connection_error" for f in failures)
    )


def fetch_rows(
    session: Session,
    memo: SampleMemo,
    ids: Sequence[int],
    since: datetime | None = None,
    until: datetime | None = None,
) -> list[Row[Any]]:
    """The sample rows of `ids` (the columns `memo` maps), oldest update first; `since`,
    `until`: none of them is older, newer (lets PostgreSQL read only the partitions in
    between)."""
    return rows_by_id(session, sample_rows(memo.columns), ids, since, until)


def rows_by_id(
    session: Session,
    query: Select[Any],
    ids: Sequence[int],
    since: datetime | None = None,
    until: datetime | None = None,
) -> list[Row[Any]]:
    """`query`'s rows (it selects `id` and `updated_at` of `traces`) of the traces `ids`,
    a chunk of ids per query, oldest update first; `since`, `until` as in `fetch_rows`.
    Between known bounds (a backlog chunk's), PostgreSQL reads all ids at once, joined
    with the rows of that time range, planned for those ids (`id_filter.unprepared`);
    else by 1,000, probing each partition's index by id. Run as Core statements on the
    session's connection: the ORM's per-statement work adds nothing here."""
    rows: list[Row[Any]] = []
    step = _ARRAY_CHUNK if until is not None and is_postgresql(session) else _CHUNK
    connection = session.connection()
    with unprepared(session):
        for start in range(0, len(ids), step):
            part = joined_ids(session, query, Trace.id, ids[start : start + step])
            if since is not None:
                part = part.where(Trace.timestamp >= since)
            if until is not None:
                part = part.where(Trace.timestamp <= until)
            rows.extend(connection.execute(part).all())
    rows.sort(key=lambda r: (r.updated_at, r.id))
    return rows


class PerSampleScoring:
    """Scores new traces with a job's per-sample metrics, given their look-back context."""

    def __init__(
        self,
        definition: JobDefinition,
        env: JobEnvironment,
        metrics: Sequence[ResolvedMetric],
        memo: SampleMemo,
    ) -> None:
        self.definition = definition
        self.env = env
        self.metrics = metrics
        self.memo = memo

    def outcomes(
        self, session: Session, rows: Sequence[Row[Any]], samples: list[Sample]
    ) -> dict[str, list[Outcome]]:
        """One outcome per metric and sample of `rows` (mapped as `samples`), in order."""
        if not self.metrics:
            return {}
        from evaluators.runner import evaluate

        context: list[Sample] = []
        if self.definition.context_lookback_s > 0:
            context = self._context(session, rows)
        names = [m.name for m in self.metrics]
        result = evaluate(context + samples, names, eval_context(self.env), aggregate=False)
        offset = len(context)
        return {
            m.name: list(
                result.per_sample.get(m.name, [Skipped("not computed")] * (offset + len(samples)))
            )[offset:]
            for m in self.metrics
        }

    def _context(self, session: Session, rows: Sequence[Row[Any]]) -> list[Sample]:
        """Earlier candidates within the look-back before the new traces (not re-scored)."""
        first = min(r.timestamp for r in rows)
        last = max(r.timestamp for r in rows)
        fresh = {r.trace_id for r in rows}
        lookback = timedelta(seconds=self.definition.context_lookback_s)
        query = (
            self.definition.candidates(
                requests(select(Trace.id, Trace.trace_id, Trace.updated_at)).where(
                    Trace.timestamp >= first - lookback, Trace.timestamp <= last
                )
            )
            .order_by(Trace.timestamp.desc())
            .limit(_CONTEXT_CAP)
        )
        keys = [
            (row_id, trace_id, epoch(updated))
            for row_id, trace_id, updated in session.execute(query)
            if trace_id not in fresh
        ]
        return [
            sample
            for _, sample in self.memo.samples(session, keys, version_s, since=first - lookback)
        ]
