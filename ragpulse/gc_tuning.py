"""Garbage-collector settings while the consumer runs: rarer, smaller collections.

A decoded batch of 5,000 traces keeps about ten container objects per trace alive (records,
their dicts and tuples) until it is stored. CPython starts a young collection each time
700 more containers were allocated than freed, so ~70 per batch, and every so often a full
one that walks every object of the process: the imported modules and SQLAlchemy's,
pydantic's and kafka-python's structures, ~100,000 objects that live as long as the
process. `gc.freeze()` after start-up takes those out of every later collection, and a
young threshold of 10,000 makes young collections ~14 times rarer; cyclic garbage is still
collected, in larger steps. Together about 10 µs of CPU per 8 KB trace
(benchmarks/RESULTS.md, "Hot paths (issue 21)").
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 10_000
"""Allocations (minus deallocations) of container objects between young collections."""


@contextmanager
def consumer_gc(young_threshold: int = YOUNG_THRESHOLD) -> Iterator[None]:
    """Freeze the objects alive now and raise the young threshold; the threshold is
    restored on exit, the freeze is not: it is one-way for the process, like the jobs'
    freeze of the loaded embedding model (`collector.jobs.run.embeddings.freeze_long_lived`),
    which an unfreeze here would undo."""
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(young_threshold, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
