"""Which stored traces a job looks at: its candidates, as a narrowing of the traces query.

A `JobDefinition` holds its `Filter` (`definition.py`) and the trace cursor applies it
when it lists a run's new traces (`sync.py`); both import it from here, below either.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Select, and_

from collector.store.models import SampleRecord, Trace

Filter = Callable[[Select[Any]], Select[Any]]
"""Narrows a `SELECT ... FROM traces` to a job's candidates."""


def requests(query: Select[Any]) -> Select[Any]:
    """Every job's first narrowing: the traces that are user requests (`traces.not_request`
    is NULL; index building, batch embedding and health checks are not)."""
    return query.where(Trace.not_request.is_(None))


def sampled_for(purpose: str) -> Filter:
    """The traces the ingest sampled for `purpose` (`collector.ingest.sampling`), e.g. the
    real-users benchmark's or the judge's."""

    def candidates(query: Select[Any]) -> Select[Any]:
        return query.join(
            SampleRecord,
            and_(SampleRecord.trace_id == Trace.trace_id, SampleRecord.purpose == purpose),
        )

    return candidates
