"""At most one run of a job at a time, in this process and across `ragpulse run` replicas.

PostgreSQL: a session-level advisory lock keyed by the job name
(`pg_try_advisory_lock`), held on a dedicated connection for the length of the run, so
with several replicas exactly one runs each job and the others skip. SQLite is a
single-host database: a process-local lock is enough there. A sharded job
(`sharded.py`) takes the same lock only to aggregate, and waits for it
(`job_lock` with `wait_s`): the worker that finishes last must write the results.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import OperationalError

logger = logging.getLogger(__name__)

_LOCAL: dict[str, threading.Lock] = {}
_LOCK_TIMEOUT = "55P03"  # lock_not_available
_LOCAL_GUARD = threading.Lock()


def advisory_key(name: str) -> int:
    """A stable signed 64-bit key for `name` (PostgreSQL advisory locks take a bigint)."""
    digest = hashlib.sha256(f"ragpulse.job:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _local_lock(name: str) -> threading.Lock:
    with _LOCAL_GUARD:
        return _LOCAL.setdefault(name, threading.Lock())


def _advisory(conn: Connection, name: str, key: int, wait_s: float | None) -> bool:
    """Take the advisory lock `key` on `conn`: at once or not at all (`wait_s` None), or
    waiting up to `wait_s` (PostgreSQL's `lock_timeout` bounds `pg_advisory_lock`)."""
    if wait_s is None:
        got = bool(conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar())
        conn.commit()
        return got
    conn.execute(text(f"SET lock_timeout = '{max(1, int(wait_s * 1000))}ms'"))
    try:
        conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": key})
        got = True
    except OperationalError as exc:
        if getattr(exc.orig, "sqlstate", None) != _LOCK_TIMEOUT:
            raise
        logger.info("job %s: its lock stayed held for %.0fs", name, wait_s)
        conn.rollback()
        got = False
    conn.execute(text("RESET lock_timeout"))
    conn.commit()
    return got


@contextmanager
def job_lock(engine: Engine, name: str, wait_s: float | None = None) -> Iterator[bool]:
    """Yield True when this caller holds the lock for `name`, False when someone else
    does (after waiting up to `wait_s` for it; None: not waiting)."""
    local = _local_lock(name)
    acquired = local.acquire(blocking=False) if wait_s is None else local.acquire(timeout=wait_s)
    if not acquired:
        yield False
        return
    try:
        if engine.dialect.name != "postgresql":
            yield True
            return
        key = advisory_key(name)
        with engine.connect() as conn:
            if not _advisory(conn, name, key, wait_s):
                yield False
                return
            try:
                yield True
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
                conn.commit()
    finally:
        local.release()
