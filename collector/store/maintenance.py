"""Storage maintenance: partitions made ahead and trace retention, hourly on the scheduler.

`maintain` makes the daily partitions of the coming `ahead` days on PostgreSQL
(`collector/store/partitions.py`) and applies the retention (`collector/store/retention.py`).
Each partition of each table is made, and each expired one dropped, in a transaction of
its own that waits at most `partitions.LOCK_TIMEOUT` for a lock (readers queue behind it
no longer than that); a partition whose lock stays taken by the jobs' reads, or whose
transaction PostgreSQL broke to end a deadlock, is tried again up to `LOCK_TRIES` times
with growing pauses and then left for the next pass, while the other days go on
(`collector/store/lock_retry.py`). `StorageMaintenance` runs it once
shortly after start-up and then every `MAINTENANCE_EVERY_S`, on a thread of its own, under
an advisory lock (`job_lock`): with several scheduler replicas one does it. A failure is
logged and tried again next time: a missing partition only sends rows to the default
partition, a late retention keeps rows longer.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from sqlalchemy import Connection, Engine

from collector.store import partitions
from collector.store.job_lock import job_lock
from collector.store.lock_retry import LOCK_TRIES, with_lock_retries
from collector.store.retention import RetentionReport, expire

logger = logging.getLogger(__name__)

NAME = "storage_maintenance"
MAINTENANCE_EVERY_S = 3600.0


@dataclass
class MaintenanceReport:
    made: list[str] = field(default_factory=list)
    """PostgreSQL: the partitions made."""
    expired: RetentionReport | None = None
    """What retention removed (None: no retention configured)."""


BACK = timedelta(days=400)
"""Without a retention, how far back days waiting in the default partition get theirs."""


def make_partitions(
    engine: Engine,
    now: datetime,
    ahead: int,
    back: timedelta = BACK,
    tries: int = LOCK_TRIES,
) -> list[str]:
    """PostgreSQL: make the missing partitions of today and the `ahead` days after it, and
    of the days since `now - back` whose rows wait in the default partition (`tries`
    attempts each while their locks are taken)."""
    if engine.dialect.name != "postgresql":
        return []
    days = set(partitions.coming_days(now, ahead))
    until = partitions.day_start(max(days) + partitions.DAY)
    with engine.connect() as conn:
        for table in partitions.PARTITIONED:
            if partitions.is_partitioned(conn, table):
                days.update(partitions.waiting_days(conn, table, now - back, until))
    made = []
    for table in partitions.PARTITIONED:
        for day in sorted(days):
            if _make_partition(engine, table, day, tries):
                made.append(partitions.partition_name(table, day))
    return made


def _make_partition(engine: Engine, table: str, day: date, tries: int) -> bool:
    """One table's partition of `day`, in its own transaction, tried again while its locks
    are taken; False when it existed, the table is not partitioned or it stayed busy."""

    def make(conn: Connection) -> bool:
        return partitions.is_partitioned(conn, table) and partitions.create_partition(
            conn, table, day
        )

    made = with_lock_retries(engine, make, partitions.partition_name(table, day), tries)
    return bool(made)


def maintain(
    engine: Engine, *, now: datetime, ahead: int, retention: timedelta | None
) -> MaintenanceReport:
    """Partitions ahead, then retention (traces older than `now - retention`)."""
    back = BACK if retention is None else retention
    report = MaintenanceReport(made=make_partitions(engine, now, ahead, back))
    if retention is not None:
        report.expired = expire(engine, now - retention)
    return report


class StorageMaintenance:
    """`maintain` soon after `start()` and then every `every_s`, until `stop()`."""

    def __init__(
        self,
        engine: Engine,
        *,
        ahead: int,
        retention: timedelta | None,
        every_s: float = MAINTENANCE_EVERY_S,
        initial_delay_s: float = 5.0,
    ) -> None:
        self.engine = engine
        self.ahead = ahead
        self.retention = retention
        self.every_s = every_s
        self.initial_delay_s = initial_delay_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> StorageMaintenance:
        self._thread = threading.Thread(target=self._loop, name=NAME, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _loop(self) -> None:
        wait = self.initial_delay_s
        while not self._stop.wait(wait):
            self.run_once()
            wait = self.every_s

    def run_once(self, now: datetime | None = None) -> MaintenanceReport | None:
        """One maintenance pass (None when another replica holds the lock or it failed)."""
        try:
            with job_lock(self.engine, NAME) as held:
                if not held:
                    return None
                report = maintain(
                    self.engine,
                    now=now or datetime.now(UTC),
                    ahead=self.ahead,
                    retention=self.retention,
                )
        except Exception:
            logger.exception("storage maintenance failed; trying again in %.0fs", self.every_s)
            return None
        if report.made:
            logger.info("storage: made partitions %s", ", ".join(report.made))
        expired = report.expired
        if expired is not None and (expired.traces or expired.outcomes):
            logger.info(
                "storage: retention removed %d traces and %d outcomes%s",
                expired.traces,
                expired.outcomes,
                f" (dropped {', '.join(expired.dropped)})" if expired.dropped else "",
            )
        return report
