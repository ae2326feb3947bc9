"""One run of a job split across worker processes by shard leases (PostgreSQL).

Every process running the jobs (`ragpulse run --role jobs`, `all` or `scheduler`, and
`ragpulse jobs run`) runs every job; a run has two phases.

1. Evaluation, on every worker at once: claim a fair share of the job's shards
   (`leases.py`), score the pending traces of those shards in one batch, and commit
   their outcomes in the transaction that moves the shards' watermarks and frees them
   (fenced on the lease); then claim again, until no shard is left that nobody evaluated
   since this run began. A batch takes at most the job's `max_new_per_run` traces
   (`scheduler.judge_traces_per_run` for the judge): when its shards hold fewer, more
   shards are claimed to fill it (a judge batch of a few traces would leave the judge's
   concurrency idle), up to the worker's fair share, so the other workers keep theirs;
   when they hold more, the shards none of whose traces made it are
   given back at once (for a worker with nothing to do) and the run ends after the
   batch, so that bound still holds per worker and run. The judge calls and encodes of
   a run are so divided between the workers, and a worker that dies mid-batch loses
   nothing: its transaction never commits, its lease expires, and the next claim finds
   the same traces pending. An outcome is stored once per (job, trace) (an upsert), so
   redone work counts once.
2. Aggregation, one worker at a time, under the job's advisory lock: write the windows
   and detectors from the per-minute sums, to which every worker has added its own
   traces, so the results are those of one worker running the whole job (to the last
   bits of the sums, which each worker adds in its own order).
   It is due when outcomes were stored since the last one (`job_shards.stores` against
   `job_state.aggregated_stores`: counters, so a batch committing during an aggregation
   is never taken as counted) and the last results are older than `aggregate_gap_s`
   (half the interval for the scheduler, 0 for `ragpulse jobs run`), or when they are
   older than the interval (the windows move on). So many workers write the results a
   few times an interval, not once each, and the first run after the last batch writes
   results that count every batch.

With one worker this is the unsharded run: it claims every shard in one batch, scores
the same traces and aggregates once.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from collector.jobs.run.definition import JobReport
from collector.jobs.run.engine import IncrementalJob
from collector.jobs.sharding.lease_keeper import LeaseKeeper
from collector.jobs.sharding.leases import Claim, LeaseLost, ShardLeases
from collector.jobs.traces.shard_scope import ShardScope
from collector.store.job_lock import job_lock
from collector.store.models import JobState

logger = logging.getLogger(__name__)


class ShardedRun:
    """One run of `job` on this worker (`run()` once)."""

    def __init__(self, job: IncrementalJob, leases: ShardLeases, engine: Engine) -> None:
        self.job = job
        self.leases = leases
        self.engine = engine
        self.config = leases.config

    def run(self) -> JobReport:
        started = time.perf_counter()
        job = self.job
        now = datetime.now(UTC)
        job.begin()
        with job.env.session_factory() as session:
            state = session.get(JobState, job.name)
            initial = state.watermark if state is not None else None
        since = self.leases.prepare(initial)
        new = shards = 0
        while (claim := self.leases.claim(since)) is not None:
            batch_new, claimed, capped = self._batch(claim, since, now)
            new += batch_new
            shards += claimed
            if capped:
                break  # at most one full batch a run: `max_new_per_run` bounds a run's spend
        written = self._aggregate()
        total = self.config.shards
        message = f"{new} new or updated traces in {shards} of {total} shards; " + (
            "aggregated" if written else "results current or due later"
        )
        return job.report(new, written, started, shards=shards, message=message)

    def _batch(self, claim: Claim, since: datetime, now: datetime) -> tuple[int, int, bool]:
        """Score the claimed shards' pending traces (claiming more to fill the batch) and
        commit them with the shards' new watermark, or free the shards untouched on any
        failure. The traces scored, the shards evaluated, and whether the batch was full
        with traces left over."""
        job = self.job
        held = dict(claim.watermarks)
        try:
            with (
                LeaseKeeper(self.leases, claim.shards) as keeper,
                job.env.session_factory() as session,
            ):

                def more() -> ShardScope | None:
                    extra = self.leases.claim(since, held=len(held))
                    if extra is None:
                        return None
                    held.update(extra.watermarks)
                    keeper.add(extra.shards)
                    return ShardScope(self.config.shards, extra.watermarks)

                scope = ShardScope(self.config.shards, claim.watermarks)
                plan = job.plan_shards(session, now, scope, self.leases.floor(session), more)
                if plan.capped:
                    # Shards none of whose traces made the batch go back at once: an idle
                    # worker takes them now instead of the next run.
                    unused = sorted(set(held) - {p.shard for p in plan.pending})
                    if unused:
                        self.leases.release(unused)
                        keeper.remove(unused)
                        for shard in unused:
                            del held[shard]
                batch = job.score(session, plan)
                keeper.stop()
                try:
                    self.leases.finish(session, sorted(held), batch.latest, stored=batch.new > 0)
                except LeaseLost:
                    session.rollback()
                    job.forget(batch)
                    raise
                session.commit()
        except BaseException:
            self._release(sorted(held))
            raise
        job.notify()
        return batch.new, len(held), plan.capped

    def _release(self, shards: list[int]) -> None:
        try:
            self.leases.release(shards)
        except Exception:
            logger.exception(
                "job %s: could not free shards (their lease will expire)", self.job.name
            )

    def _aggregate(self) -> int:
        """Write the windows when due (`_due`), one worker at a time; 0 results if not."""
        job = self.job
        with job.env.session_factory() as session:
            if not self._due(session, session.get(JobState, job.name)):
                return 0
        with job_lock(self.engine, job.name, wait_s=self.config.lease_s) as held:
            if not held:
                return 0
            with job.env.session_factory() as session:
                state = session.get(JobState, job.name)
                if not self._due(session, state):
                    return 0  # another worker just did it
                stores = self.leases.stores(session)  # before the tail: all it will read
                changed = state is None or state.aggregated_stores != stores
                floor = self.leases.floor(session)
                written = job.aggregate_shared(
                    session, datetime.now(UTC), floor, changed=changed, stores=stores
                )
                session.commit()
        return written

    def _due(self, session: Session, state: JobState | None) -> bool:
        """An aggregation is due when the job's results are older than the interval (the
        windows move on), or when outcomes were stored since they were written and they
        are older than `aggregate_gap_s`: with many workers storing batches all the time,
        the results are written a few times an interval, not once per worker and run."""
        if state is None or state.last_run_at is None:
            return True
        age = (datetime.now(UTC) - state.last_run_at).total_seconds()
        if age >= self.config.interval_s:
            return True
        new = state.aggregated_stores is None or self.leases.stores(session) > (
            state.aggregated_stores
        )
        return new and age >= self.config.aggregate_gap_s
