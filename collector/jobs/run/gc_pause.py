"""No automatic garbage collection while a chunk of traces is scored.

Scoring a backlog chunk of 20,000 traces keeps ~1M container objects alive until it is
stored (fetched rows and their JSON, samples and their contexts, outcomes): CPython
starts a young collection every 700 of them and every so often a full one that walks
them all, which took a quarter of a back-fill's scoring CPU (17 of 69 s over 403,000
traces). Nearly none of them is part of a cycle (with collection off for the whole
back-fill its peak memory grew by 40 MB), so collection is paused for the chunk and
resumed after it, when its objects are gone or handed to the sample memo.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """Turn automatic collection off inside the block (back on after it, unless it was
    off already)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
