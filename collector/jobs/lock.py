"""At most one run of a job at a time, in this process and across `ragpulse run` replicas.

PostgreSQL: a session-level advisory lock keyed by the job name
(`pg_try_advisory_lock`), held on a dedicated connection for the length of the run, so
with several replicas exactly one runs each job and the others skip. SQLite is a
single-host database: a process-local lock is enough there.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, text

_LOCAL: dict[str, threading.Lock] = {}
_LOCAL_GUARD = threading.Lock()


def advisory_key(name: str) -> int:
    """A stable signed 64-bit key for `name` (PostgreSQL advisory locks take a bigint)."""
    digest = hashlib.sha256(f"ragpulse.job:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _local_lock(name: str) -> threading.Lock:
    with _LOCAL_GUARD:
        return _LOCAL.setdefault(name, threading.Lock())


@contextmanager
def job_lock(engine: Engine, name: str) -> Iterator[bool]:
    """Yield True when this caller holds the lock for `name`, False when someone else does."""
    local = _local_lock(name)
    if not local.acquire(blocking=False):
        yield False
        return
    try:
        if engine.dialect.name != "postgresql":
            yield True
            return
        key = advisory_key(name)
        with engine.connect() as conn:
            got = bool(conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar())
            conn.commit()
            if not got:
                yield False
                return
            try:
                yield True
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
                conn.commit()
    finally:
        local.release()
