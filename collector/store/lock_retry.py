"""PostgreSQL: the storage maintenance's transactions beside busy readers and writers.

Making a partition (`partitions.create_partition`) and dropping an expired one
(`partitions.drop_partition`) need ACCESS EXCLUSIVE locks that the jobs' reads hold up.
Each such step runs here in a transaction of its own that waits at most
`partitions.LOCK_TIMEOUT` for any lock, so readers queue behind the DDL's lock request no
longer than that; when PostgreSQL gives up on a lock (the timeout, `NOWAIT`, or a
deadlock it broke by aborting us) the step is tried again after a pause that doubles,
`tries` times in all, and then left for the next maintenance pass: a partition made late
only sends rows to the default partition, a day dropped late is kept an hour longer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import OperationalError

from collector.store import partitions

logger = logging.getLogger(__name__)

T = TypeVar("T")

LOCK_TRIES = 5
"""Attempts per step while its locks are taken (pauses of 0.5, 1, 2, 4 s between)."""
FIRST_PAUSE_S = 0.5


def with_lock_retries(
    engine: Engine,
    step: Callable[[Connection], T],
    what: str,
    tries: int = LOCK_TRIES,
    first_pause_s: float = FIRST_PAUSE_S,
) -> T | None:
    """`step(conn)` in a transaction of its own with a bounded lock wait, committed; tried
    again while other transactions hold its locks. None when they still did after `tries`
    attempts (logged with `what`, the object it works on); other errors are raised."""
    if tries < 1:
        raise ValueError("tries must be at least 1")
    pause = first_pause_s
    for attempt in range(1, tries + 1):
        try:
            with engine.begin() as conn:
                partitions.limit_lock_wait(conn)
                return step(conn)
        except OperationalError as exc:
            if not partitions.is_lock_conflict(exc):
                raise
            if attempt == tries:
                logger.warning(
                    "storage: %s stayed locked by other transactions (%d tries); next pass",
                    what,
                    tries,
                )
                return None
            logger.debug("storage: %s is locked (try %d); again in %.1fs", what, attempt, pause)
            time.sleep(pause)
            pause *= 2
    return None
