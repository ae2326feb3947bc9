"""What the jobs use of the things the service hands them, as types.

A job is given a stored-trace -> `Sample` mapper (`JobEnvironment`), typed here. The
judge's type is the library's `evaluators.judge.protocol.Judge` and the embedder's
`evaluators.embedder.TextEncoder` (what the metrics call on them), the results' is
`publish.ResultsSink`; none is repeated here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

from sqlalchemy import Row

from collector.store.models import Trace
from evaluators.sample import Sample

StoredTrace: TypeAlias = Trace | Row[Any]
"""A stored trace as the jobs read it: a `Trace`, or a row of `trace_rows.SAMPLE_COLUMNS`
(the same attribute names, fetched without the ORM)."""

SampleMapper: TypeAlias = Callable[[StoredTrace], Sample]
"""Maps a stored trace to the `Sample` the metrics read (`collector.store.samples`)."""
