"""Leases on the shards of a job's trace space, kept in PostgreSQL (`job_shards`).

How several processes running the jobs share one job's evaluation with nothing but the
database: each (job, shard) row says who leases the shard until when (`owner`,
`lease_until`), when a worker last evaluated it (`checked_at`) and the newest trace
version done in it (`watermark`). `job_workers` says which workers run the job, each
until its `alive_until`. One run on a worker (`sharded.py`):

- `prepare`: make sure the job has `shards` rows, register the worker as live for the
  next interval, count the live workers and read the database's clock (the run's start).
  A process's first run after `register` first waits until no worker has registered
  for `start_grace_s`: processes started together (three `ragpulse jobs run` at once)
  have then all registered, count each other and claim at about the same moment, where
  before the first to arrive leased every shard before the others had registered;
- `claim`: lease up to ceil(shards / live workers) shards, the live workers counted
  again at each claim (a worker started mid-run shrinks the others' next claims), whose
  lease is free or expired and that nobody evaluated since the run began, least recently
  evaluated first, with `SELECT ... FOR UPDATE SKIP LOCKED`, so concurrent claims neither
  wait for each other nor get the same shard. The claims that fill one batch together
  stay within that fair share (`held`); after its batch a worker claims again, so one
  that is done early takes what nobody has claimed yet. An expired lease is a takeover:
  its worker died or stalled;
- `renew` (every third of the lease, `lease_keeper.py`) while the claimed traces are scored;
- `finish`, in the transaction that stores their outcomes: only while this worker still
  owns the shards (fencing: a worker whose lease was taken over after it stalled commits
  nothing, and the new owner redoes its work), move their watermark and `checked_at`,
  free the lease. A crash before the commit loses nothing: the lease expires and
  whoever takes the shard over finds the same traces pending.

Every time is the database's `clock_timestamp()`, so the workers' clocks need not agree.
A worker counts as live for `presence_s` after it last registered (an interval and a
lease), so workers whose runs do not overlap still split the shards; a dead worker only
shrinks the others' shares until then (they claim again until no shard is left).
"""

from __future__ import annotations

import logging
import math
import os
import socket
import time
import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import BindParameter, Engine, bindparam, text
from sqlalchemy.orm import Session

from collector.store.job_lock import advisory_key

logger = logging.getLogger(__name__)


class LeaseLost(RuntimeError):
    """A worker's lease on shards it worked on was taken over: its work is not stored."""


@dataclass(frozen=True)
class ShardConfig:
    """`scheduler.shards`, `shard_lease_s`, `shard_start_grace_s` and the jobs'
    `interval_s`."""

    shards: int
    lease_s: float
    interval_s: float
    aggregate_gap_s: float = 0.0
    """The least time between two aggregations of new outcomes (`sharded.py`)."""
    start_grace_s: float = 2.0
    """A just-started worker's first claim waits until no worker has come or gone for
    this long (processes started together register a second or so apart)."""

    @property
    def presence_s(self) -> float:
        """A worker counts as live this long after its last run began: its next run is
        due within an interval."""
        return self.interval_s + self.lease_s


@dataclass(frozen=True)
class Claim:
    """Shards leased by one `claim`: their watermarks, and the previous owners of those
    whose lease had expired (taken over)."""

    watermarks: dict[int, datetime | None]
    taken_over: dict[int, str]

    @property
    def shards(self) -> list[int]:
        return sorted(self.watermarks)


def worker_id() -> str:
    """This process's name in `owner` and `job_workers`: host, pid and a random part
    (a restarted process with a recycled pid is another worker)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"[-128:]


_SHARDS: BindParameter[list[int]] = bindparam("shards", expanding=True)

_CLAIM = text(
    """
    WITH free AS (
        SELECT shard, owner, lease_until FROM job_shards
        WHERE job = :job
          AND (lease_until IS NULL OR lease_until < clock_timestamp())
          AND (checked_at IS NULL OR checked_at < :since)
        ORDER BY checked_at NULLS FIRST, shard
        LIMIT :want
        FOR UPDATE SKIP LOCKED
    )
    UPDATE job_shards AS s
    SET owner = :me, lease_until = clock_timestamp() + make_interval(secs => :lease)
    FROM free WHERE s.job = :job AND s.shard = free.shard
    RETURNING s.shard, s.watermark, free.owner, free.lease_until
    """
)
_RENEW = text(
    "UPDATE job_shards SET lease_until = clock_timestamp() + make_interval(secs => :lease) "
    "WHERE job = :job AND shard IN :shards AND owner = :me AND lease_until IS NOT NULL"
).bindparams(_SHARDS)
_FINISH = text(
    "UPDATE job_shards SET lease_until = NULL, checked_at = clock_timestamp(), "
    "watermark = GREATEST(watermark, :watermark), stores = stores + :stored "
    "WHERE job = :job AND shard IN :shards AND owner = :me"
).bindparams(_SHARDS)
_RELEASE = text(
    "UPDATE job_shards SET lease_until = NULL WHERE job = :job AND shard IN :shards AND owner = :me"
).bindparams(_SHARDS)
_LIVE = text(
    "SELECT count(*) FROM job_workers WHERE job = :job AND alive_until >= clock_timestamp()"
)
_REGISTRATIONS = text(
    "SELECT count(*), extract(epoch FROM clock_timestamp() - "
    "(max(alive_until) - make_interval(secs => :ttl))) "
    "FROM job_workers WHERE job = :job AND alive_until >= clock_timestamp()"
)
_PRESENT = text(
    "INSERT INTO job_workers (job, worker, alive_until) "
    "VALUES (:job, :me, clock_timestamp() + make_interval(secs => :ttl)) "
    "ON CONFLICT (job, worker) DO UPDATE SET alive_until = excluded.alive_until"
)


class ShardLeases:
    """One worker's leases on one job's shards (PostgreSQL only)."""

    def __init__(self, engine: Engine, job: str, worker: str, config: ShardConfig) -> None:
        self.engine = engine
        self.job = job
        self.worker = worker
        self.config = config
        self.live = 1
        """Live workers of the job at this worker's last prepare or claim (itself included)."""
        self._registered_at: float | None = None

    def prepare(self, initial: datetime | None) -> datetime:
        """Before a run: the job's shard rows exist (new ones start at `initial`, the
        job's watermark from before it was sharded), this worker is registered as live;
        returns the database's time, the run's start."""
        self._ensure_rows(initial)
        if self._registered_at is not None:
            self._settle(self._registered_at)  # before our presence moves on
            self._registered_at = None
        args = {"job": self.job, "me": self.worker}
        with self.engine.begin() as conn:
            conn.execute(_PRESENT, {**args, "ttl": self.config.presence_s})
            conn.execute(
                text(
                    "DELETE FROM job_workers WHERE job = :job AND alive_until < clock_timestamp()"
                ),
                args,
            )
        with self.engine.begin() as conn:
            self.live = int(conn.execute(_LIVE, args).scalar_one())
            started: datetime = conn.execute(text("SELECT clock_timestamp()")).scalar_one()
        return started

    def _settle(self, registered_at: float) -> None:
        """A just-started worker waits until no worker of the job has registered for
        `start_grace_s` (its own registration at `registered_at`, monotonic, included;
        for at most twice that): the workers started with it have then registered, and
        all of them begin claiming at about the same moment, so none finishes its share
        and takes another's before that one has claimed. The latest registration is
        first read from `alive_until` (it is `presence_s` after a registration; runs
        that begin later renew it, so afterwards only a change in the number of workers
        counts)."""
        grace = self.config.start_grace_s
        deadline = time.monotonic() + 2 * grace
        seen: int | None = None
        changed = registered_at
        args = {"job": self.job, "ttl": self.config.presence_s}
        while True:
            with self.engine.connect() as conn:
                live, age = conn.execute(_REGISTRATIONS, args).one()
            now = time.monotonic()
            if seen is None:
                changed = max(changed, now - float(age or 0.0))
            elif live != seen:
                changed = now
            seen = int(live)
            until = min(changed + grace, deadline)
            if now >= until:
                return
            time.sleep(min(0.2, until - now))

    def register(self) -> None:
        """Count this worker as live for the job from now on (a process starting up
        registers before its first run, so workers started together split the shards
        at once)."""
        with self.engine.begin() as conn:
            conn.execute(
                _PRESENT, {"job": self.job, "me": self.worker, "ttl": self.config.presence_s}
            )
        self._registered_at = time.monotonic()

    def _ensure_rows(self, initial: datetime | None) -> None:
        """One row per shard; when another shard count was used before (settings changed)
        the rows are remade, each starting at the oldest watermark of the old ones (a
        trace may now be in another shard: never skip what its old shard had not done)."""
        args = {"job": self.job, "n": self.config.shards}
        shape = "SELECT count(*), coalesce(max(shard), -1) FROM job_shards WHERE job = :job"
        with self.engine.connect() as conn:
            count, top = conn.execute(text(shape), args).one()
        if (count, top) == (self.config.shards, self.config.shards - 1):
            return
        with self.engine.begin() as conn:
            key = advisory_key(f"shards:{self.job}")
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": key})
            count, top = conn.execute(text(shape), args).one()
            if (count, top) == (self.config.shards, self.config.shards - 1):
                return
            start = initial
            if count:
                logger.warning(
                    "job %s: its %d shards become %d (scheduler.shards changed; every worker "
                    "must use the same number): the shards restart at their oldest watermark",
                    self.job,
                    count,
                    self.config.shards,
                )
                done, oldest = conn.execute(
                    text(
                        "SELECT count(watermark), min(watermark) FROM job_shards WHERE job = :job"
                    ),
                    args,
                ).one()
                start = oldest if done == count else None
                conn.execute(text("DELETE FROM job_shards WHERE job = :job"), args)
            conn.execute(
                text(
                    "INSERT INTO job_shards (job, shard, watermark) "
                    "SELECT :job, g, :start FROM generate_series(0, :n - 1) AS g"
                ),
                {**args, "start": start},
            )

    def want(self) -> int:
        """This worker's fair share of the shards."""
        return math.ceil(self.config.shards / max(1, self.live))

    def claim(self, since: datetime, held: int = 0) -> Claim | None:
        """Lease up to a fair share of the shards not evaluated since `since`, less the
        `held` ones this worker's batch has already (None: none is left that is not
        leased by another worker, or the batch has its share)."""
        with self.engine.begin() as conn:
            self.live = max(1, int(conn.execute(_LIVE, {"job": self.job}).scalar_one()))
            want = self.want() - held
            if want <= 0:
                return None
            rows = conn.execute(
                _CLAIM,
                {
                    "job": self.job,
                    "me": self.worker,
                    "since": since,
                    "want": want,
                    "lease": self.config.lease_s,
                },
            ).all()
        if not rows:
            return None
        taken = {
            shard: owner
            for shard, _, owner, until in rows
            if until is not None and owner is not None and owner != self.worker
        }
        if taken:
            logger.warning(
                "job %s: took over shard(s) %s from %s (lease expired: the worker died or stalled)",
                self.job,
                ",".join(map(str, sorted(taken))),
                ",".join(sorted(set(taken.values()))),
            )
        return Claim({shard: mark for shard, mark, _, _ in rows}, taken)

    def renew(self, shards: list[int]) -> int:
        """Extend the lease on `shards` (and this worker's presence); how many are still
        this worker's."""
        with self.engine.begin() as conn:
            args = {"job": self.job, "me": self.worker}
            conn.execute(_PRESENT, {**args, "ttl": self.config.presence_s})
            result = conn.execute(_RENEW, {**args, "shards": shards, "lease": self.config.lease_s})
        return int(result.rowcount)

    def finish(
        self, session: Session, shards: list[int], watermark: datetime | None, *, stored: bool
    ) -> None:
        """In the caller's transaction (the one storing the shards' outcomes): move the
        shards' watermark to `watermark` (None: unchanged), mark them evaluated now, count
        the batch in `stores` when it `stored` outcomes, and free them. Raises `LeaseLost`
        when another worker took any of them over: the caller must roll back."""
        result = session.execute(
            _FINISH,
            {
                "job": self.job,
                "me": self.worker,
                "shards": shards,
                "watermark": watermark,
                "stored": int(stored),
            },
        )
        if int(getattr(result, "rowcount", 0)) != len(shards):
            raise LeaseLost(
                f"job {self.job}: shard(s) {','.join(map(str, shards))} were taken over by "
                "another worker while this one worked on them; its results are discarded"
            )

    def release(self, shards: list[int]) -> None:
        """Free `shards` without marking them evaluated (after a failure)."""
        with self.engine.begin() as conn:
            conn.execute(_RELEASE, {"job": self.job, "me": self.worker, "shards": shards})

    def stores(self, session: Session) -> int:
        """The batches of outcomes stored from the job's shards so far (a counter: it
        only grows, so a sum read before a tail tells what a later one has not seen)."""
        return int(
            session.execute(
                text("SELECT coalesce(sum(stores), 0) FROM job_shards WHERE job = :job"),
                {"job": self.job},
            ).scalar_one()
        )

    def floor(self, session: Session) -> datetime | None:
        """The oldest shard watermark (None while a shard has none): every outcome any
        worker stores from now on is of a trace version newer than it minus `GRACE`."""
        count, done, oldest = session.execute(
            text(
                "SELECT count(*), count(watermark), min(watermark) FROM job_shards WHERE job = :job"
            ),
            {"job": self.job},
        ).one()
        return oldest if count and done == count else None

    def forget(self) -> None:
        """This worker stops running the job (a graceful stop): no longer live."""
        with self.engine.begin() as conn:
            conn.execute(
                text("DELETE FROM job_workers WHERE job = :job AND worker = :me"),
                {"job": self.job, "me": self.worker},
            )
