"""Quality SLO events: each trace's outcome of an SLO's metric, counted once, for good.

Design (why the counters are exact and survive restarts): an event is a row of
`slo_events` keyed by (slo, trace_id), inserted with ON CONFLICT DO NOTHING ... RETURNING;
only the rows actually inserted add to `slo_event_counts` (slo, tenant, outcome), in the
same transaction. So a job that re-runs, a trace evaluated again, a worker that restarts
or two processes recording the same outcomes change no count twice, and the counts only
grow: `ragpulse_slo_events_total` (`exporters/slo.py`) reads them from the table, a true
Prometheus counter across restarts of any process. The first final classification of a
trace counts; a later version of it (a corrected label) is not counted again: counters
cannot be taken back. A skipped outcome (no label yet) is no event, so the label that
arrives later makes the trace's first event.

Two paths feed `record`, both idempotent: `SloEventRecorder`, an outcome observer told of
every job run's new outcomes after their commit, and `reconcile`, which re-reads the
stored outcomes (`job_outcomes`) of a look-back and records whatever the observer missed
(a process that died between the commit and the observer): the service runs it at start.

Tenants: the `tenant` group value (cleaned by the jobs), `""` for none. At most
`max_tenants` tenants per SLO get counters of their own, chosen first come (those already
counted keep theirs, so no counter ever moves to another series); later ones count under
`other`. Two writers adding tenants at once may pass the bound by a few.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, sessionmaker

from collector.jobs.outcomes.codec import decode
from collector.jobs.recording.observers import Evaluated
from collector.jobs.windows.labels import OTHER
from collector.settings.slo_spec import SloSpec
from collector.store.models import JobOutcome, SloEvent, SloEventCount
from evaluators.outcome import Failed, Outcome, Score

logger = logging.getLogger(__name__)

TENANT = "tenant"
GOOD, BAD = "good", "bad"


@dataclass(frozen=True, slots=True)
class SliEvent:
    """One trace's event of one SLO."""

    slo: str
    trace_id: str
    tenant: str
    good: bool
    ts: datetime


def classify(spec: SloSpec, outcome: Outcome) -> bool | None:
    """Good (True), bad (False) or no event (None) of one outcome of the SLO's metric."""
    if spec.kind == "success":
        if isinstance(outcome, Score):
            return True
        return False if isinstance(outcome, Failed) else None
    if isinstance(outcome, Score):
        return spec.is_good(outcome.value)
    return None


def events_of(
    specs: Sequence[SloSpec],
    trace_id: str,
    ts: float,
    groups: Mapping[str, str] | None,
    outcomes: Mapping[str, Outcome],
) -> list[SliEvent]:
    """The events one trace's outcomes make (`ts`: the trace's time, epoch seconds)."""
    out = []
    tenant = str((groups or {}).get(TENANT) or "")
    when = datetime.fromtimestamp(ts, UTC)
    for spec in specs:
        outcome = outcomes.get(spec.metric)
        if outcome is None:
            continue
        good = classify(spec, outcome)
        if good is not None:
            out.append(SliEvent(spec.name, trace_id, tenant, good, when))
    return out


def record(
    session: Session, events: Sequence[SliEvent], max_tenants: int
) -> Counter[tuple[str, str, str]]:
    """Insert the events not recorded yet and add them to the counts (the caller commits).
    Returns what was added: (slo, tenant, outcome) -> events."""
    added: Counter[tuple[str, str, str]] = Counter()
    if not events:
        return added
    rows = _bounded(session, events, max_tenants)
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    stmt = insert(SloEvent).on_conflict_do_nothing(index_elements=["slo", "trace_id"])
    unique = list({(r["slo"], r["trace_id"]): r for r in rows}.values())
    for start in range(0, len(unique), 1000):
        batch = unique[start : start + 1000]
        inserted = session.execute(
            stmt.values(batch).returning(SloEvent.slo, SloEvent.tenant, SloEvent.good)
        )
        for slo, tenant, good in inserted:
            added[(slo, tenant, GOOD if good else BAD)] += 1
    if added:
        counts = insert(SloEventCount)
        counts = counts.on_conflict_do_update(
            index_elements=["slo", "tenant", "outcome"],
            set_={"count": SloEventCount.count + counts.excluded["count"]},
        )
        session.execute(
            counts,
            [
                {"slo": s, "tenant": t, "outcome": o, "count": n}
                for (s, t, o), n in sorted(added.items())
            ],
        )
        # both outcomes of a tenant exist from its first event on: a ratio never lacks one
        other = insert(SloEventCount).on_conflict_do_nothing(
            index_elements=["slo", "tenant", "outcome"]
        )
        session.execute(
            other,
            [
                {"slo": s, "tenant": t, "outcome": BAD if o == GOOD else GOOD, "count": 0}
                for (s, t, o) in sorted(added)
            ],
        )
    return added


def _bounded(
    session: Session, events: Sequence[SliEvent], max_tenants: int
) -> list[dict[str, Any]]:
    """The events as rows, tenants past the bound of their SLO as `other`."""
    slos = sorted({e.slo for e in events})
    known: dict[str, set[str]] = {s: set() for s in slos}
    for slo, tenant in session.execute(
        select(SloEventCount.slo, SloEventCount.tenant)
        .where(SloEventCount.slo.in_(slos))
        .distinct()
    ):
        known[slo].add(tenant)
    rows = []
    for e in events:
        tenants = known[e.slo]
        tenant = e.tenant
        if tenant not in tenants:
            own = len(tenants - {OTHER})
            if own >= max_tenants:
                tenant = OTHER
            tenants.add(tenant)
        rows.append(
            {"slo": e.slo, "trace_id": e.trace_id, "tenant": tenant, "good": e.good, "ts": e.ts}
        )
    return rows


def reconcile(
    session: Session,
    specs: Sequence[SloSpec],
    jobs: Mapping[str, Sequence[str]],
    since: datetime,
    max_tenants: int,
) -> int:
    """Record the events of the outcomes stored since `since` (trace time) that are not
    recorded yet; `jobs`: metric -> the jobs storing its outcomes. Returns events added."""
    names = sorted({j for s in specs for j in jobs.get(s.metric, ())})
    added = 0
    if not names:
        return added
    query = (
        select(JobOutcome.trace_id, JobOutcome.ts, JobOutcome.groups, JobOutcome.outcomes)
        .where(JobOutcome.job.in_(names), JobOutcome.ts >= since)
        .execution_options(yield_per=5000)
    )
    batch: list[SliEvent] = []
    for trace_id, ts, groups, stored in session.execute(query):
        outcomes = _decoded(stored, {s.metric for s in specs})
        batch.extend(events_of(specs, trace_id, _epoch(ts), groups, outcomes))
        if len(batch) >= 5000:
            added += sum(record(session, batch, max_tenants).values())
            batch = []
    added += sum(record(session, batch, max_tenants).values())
    return added


def _decoded(stored: Mapping[str, Any] | None, metrics: set[str]) -> dict[str, Outcome]:
    """The final outcomes among the stored ones (one waiting for a retry is not final)."""
    out = {}
    for metric, value in (stored or {}).items():
        if metric in metrics and (outcome := decode(value)) is not None:
            out[metric] = outcome
    return out


def _epoch(ts: datetime) -> float:
    return (ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)).timestamp()


def prune(session: Session, before: datetime) -> int:
    """Delete events of traces older than `before` (their counts stay)."""
    result: Any = session.execute(delete(SloEvent).where(SloEvent.ts < before))
    return int(result.rowcount or 0)


def read_counts(session: Session) -> list[tuple[str, str, str, int]]:
    """Every counter: (slo, tenant, outcome, count)."""
    rows = session.execute(
        select(
            SloEventCount.slo, SloEventCount.tenant, SloEventCount.outcome, SloEventCount.count
        ).order_by(SloEventCount.slo, SloEventCount.tenant, SloEventCount.outcome)
    )
    return [(s, t, o, int(n)) for s, t, o, n in rows]


class SloEventRecorder:
    """An outcome observer recording the SLOs' events of every job run, in a transaction of
    its own right after the job's commit (what it misses, `reconcile` records)."""

    def __init__(
        self, specs: Sequence[SloSpec], factory: sessionmaker[Session], max_tenants: int
    ) -> None:
        self.specs = tuple(specs)
        self.factory = factory
        self.max_tenants = max_tenants
        self._metrics = {s.metric for s in self.specs}

    def observe(self, evaluated: Sequence[Evaluated]) -> None:
        events = list(self._events(evaluated))
        if not events:
            return
        with self.factory() as session, session.begin():
            record(session, events, self.max_tenants)

    def _events(self, evaluated: Iterable[Evaluated]) -> Iterable[SliEvent]:
        for item in evaluated:
            if self._metrics.isdisjoint(item.outcomes):
                continue
            yield from events_of(
                self.specs, item.trace_id, item.timestamp, item.groups, item.outcomes
            )
