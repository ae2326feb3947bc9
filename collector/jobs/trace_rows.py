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
from typing import Any

from sqlalchemy import Select, null, select
from sqlalchemy.orm import Session

from collector.store.models import Trace
from evaluators.sample import Sample

CHUNK = 1000
"""Ids per `IN (...)` when fetching rows by id."""

SAMPLE_COLUMNS = (
    Trace.id,
    Trace.trace_id,
    Trace.timestamp,
    Trace.updated_at,
    Trace.question,
    Trace.answer,
    Trace.contexts,
    Trace.reference,
    Trace.relevant_ids,
    Trace.relevance,
    Trace.session_id,
    Trace.user_id,
    Trace.turn,
    Trace.judge_decision,
    Trace.judge_score,
    Trace.judge_model,
    Trace.judge_latency_ms,
    Trace.judge_label,
    Trace.cache_hit,
    Trace.cache_similarity,
    Trace.tags,
    Trace.shown_url,
)


ALWAYS = frozenset({"id", "trace_id", "timestamp", "updated_at", "question", "tags"})
"""Columns every job reads: the row's identity and version, the time and group tags the
windows are built from, and the question (a `Sample` requires one)."""
FIELD_COLUMNS: dict[str, tuple[str, ...]] = {
    "trace_id": ("trace_id",),
    "question": ("question",),
    "answer": ("answer",),
    "contexts": ("contexts",),
    "reference": ("reference",),
    "relevance": ("relevance", "relevant_ids", "shown_url"),
    "session_id": ("session_id",),
    "user_id": ("user_id",),
    "turn": ("turn",),
    "timestamp": ("timestamp",),
    "judge": ("judge_decision", "judge_score", "judge_model", "judge_latency_ms"),
    "judge_label": ("judge_label",),
    "cache_hit": ("cache_hit",),
    "cache_similarity": ("cache_similarity",),
    "tags": ("tags",),
    "shown_urls": ("shown_url",),
    "ground_truth": ("relevance", "relevant_ids", "shown_url"),
}
"""`Sample` field -> the trace columns it is mapped from."""


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
        self, session: Session, keys: Sequence[Key], updated_s: Callable[[Any], float]
    ) -> list[tuple[str, Sample]]:
        """(trace_id, sample) for `keys` in order (a trace deleted meanwhile is left out):
        remembered samples reused, the others fetched by id and mapped."""
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
            rows = list(session.execute(query))
            for row, sample in zip(rows, self.map_rows(rows, updated_s), strict=True):
                found[row.trace_id] = sample
        return [(trace_id, found[trace_id]) for _, trace_id, _ in keys if trace_id in found]
