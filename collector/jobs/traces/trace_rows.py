"""Stored traces as light rows for the jobs: only the columns a `Sample` is built from.

The jobs read thousands of traces per run (the new ones, the UX look-back, the dataset
metrics' recent candidates). Selecting these columns with a Core query and mapping the
rows directly skips the ORM's identity map and per-object state, and leaves out columns
no metric reads (usage, metadata, OTLP spans). A row has the same attribute names as a
`Trace`, so `collector.store.samples.trace_to_sample` (or a test's mapper) takes either.

A job whose metrics all declare the `Sample` fields they read (`MetricSpec.reads`) asks
for only those: the other sample columns come back as NULL under their usual names, so
the mapper is unchanged and the fields keep their defaults. The UX job thus neither
transfers nor parses nor maps the retrieved contexts (JSON, a few KB per trace) of the
10,000s of traces it scores.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, null, select
from sqlalchemy.orm import Session

from collector.store.models import Trace
from collector.store.repository import TRACES
from collector.store.samples import COLUMNS, FIELD_COLUMNS
from evaluators.sample import Sample

CHUNK = 1000
"""Ids per `IN (...)` when fetching rows by id."""

ROW_KEY = ("id", "updated_at")
"""Which version of which trace a row is (with `trace_id`): the memo's key."""

SLICE_COLUMNS = ("model",)
"""Read for the trace's slice dimensions (`collector.jobs.windows.slices`), not for its Sample."""

FIRST_SEEN = ("received_at",)
"""Read to tell a trace never updated since it arrived (its timestamp cannot have moved:
`sync.TraceCursor` finds its stored outcome at that timestamp)."""

SAMPLE_COLUMNS = tuple(
    getattr(Trace, c.key)
    for c in TRACES.columns
    if c.key in ROW_KEY or c.key in COLUMNS or c.key in SLICE_COLUMNS or c.key in FIRST_SEEN
)
"""The row key and every column a `Sample` is mapped from, in the table's order."""

ALWAYS = frozenset(ROW_KEY + SLICE_COLUMNS + FIRST_SEEN).union(
    *(FIELD_COLUMNS[f] for f in ("trace_id", "timestamp", "question", "tags"))
)
"""Columns every job reads: the row's identity and version, the time and group tags the
windows are built from, and the question (a `Sample` requires one)."""


def columns_for(fields: Collection[str] | None) -> frozenset[str] | None:
    """Names of the sample columns needed to fill `fields` (None: all of them)."""
    if fields is None:
        return None
    unknown = sorted(set(fields) - FIELD_COLUMNS.keys())
    if unknown:
        raise ValueError(
            f"unknown Sample field(s) {', '.join(unknown)}; known: {', '.join(FIELD_COLUMNS)}"
        )
    return ALWAYS.union(*(FIELD_COLUMNS[f] for f in fields))


def sample_rows(columns: Collection[str] | None = None) -> Select[Any]:
    """`SELECT <the sample columns> FROM traces`, to be narrowed by the caller.

    With `columns` (see `columns_for`), the other sample columns are selected as NULL.
    """
    if columns is None:
        return select(*SAMPLE_COLUMNS)
    return select(*(c if c.key in columns else null().label(c.key) for c in SAMPLE_COLUMNS))


Key = tuple[int, str, float]
"""(traces.id, trace_id, updated_at as epoch seconds): which version of which trace."""


class SampleMemo:
    """Samples of the trace versions a job used in its last two runs, by trace id.

    Successive runs read mostly the same traces: this run's new traces are the next run's
    UX look-back, and the dataset metrics' recent candidates are largely the new traces.
    A run first selects the keys of what it needs (narrow columns), then fetches and maps
    only the versions it has not mapped recently. Entries not used in a run are dropped
    at the end of the next one, so memory follows what a run reads.
    """

    def __init__(
        self, to_sample: Callable[[Any], Sample], columns: Collection[str] | None = None
    ) -> None:
        self._to_sample = to_sample
        self.columns = columns
        """The sample columns fetched (`columns_for`); None: all."""
        self._current: dict[str, tuple[float, Sample]] = {}
        self._previous: dict[str, tuple[float, Sample]] = {}
        self.mapped = 0
        self.reused = 0

    def next_run(self) -> None:
        self._previous, self._current = self._current, {}

    def get(self, trace_id: str, updated_s: float) -> Sample | None:
        entry = self._current.get(trace_id) or self._previous.get(trace_id)
        if entry is None or entry[0] != updated_s:
            return None
        self._current[trace_id] = entry
        return entry[1]

    def map_rows(self, rows: Iterable[Any], updated_s: Callable[[Any], float]) -> list[Sample]:
        """Map fetched rows (and remember them)."""
        out = []
        for row in rows:
            sample = self._to_sample(row)
            self._current[row.trace_id] = (updated_s(row), sample)
            out.append(sample)
        self.mapped += len(out)
        return out

    def samples(
        self,
        session: Session,
        keys: Sequence[Key],
        updated_s: Callable[[Any], float],
        since: datetime | None = None,
    ) -> list[tuple[str, Sample]]:
        """(trace_id, sample) for `keys` in order (a trace deleted meanwhile is left out):
        remembered samples reused, the others fetched by id and mapped. `since`: no key's
        trace is older (PostgreSQL then reads only the partitions from then on)."""
        found: dict[str, Sample] = {}
        missing: list[int] = []
        for row_id, trace_id, version in keys:
            sample = self.get(trace_id, version)
            if sample is None:
                missing.append(row_id)
            else:
                found[trace_id] = sample
        self.reused += len(keys) - len(missing)
        for start in range(0, len(missing), CHUNK):
            part = missing[start : start + CHUNK]
            query = sample_rows(self.columns).where(Trace.id.in_(part))
            if since is not None:
                query = query.where(Trace.timestamp >= since)
            rows = list(session.execute(query))
            for row, sample in zip(rows, self.map_rows(rows, updated_s), strict=True):
                found[row.trace_id] = sample
        return [(trace_id, found[trace_id]) for _, trace_id, _ in keys if trace_id in found]
