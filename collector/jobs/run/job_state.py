"""A job's `job_state` row: when its last run was, how it went and how long it took.

Every job has one row (`collector.store.models.JobState`), made by its first run. The
jobs that compute their own way (canary, external, judge_agreement, judge_consistency)
record a finished run with `record_run`, in the run's transaction. The per-trace engine
writes the same columns in two steps instead: `IncrementalJob._store` is shared with the
sharded aggregation, which records no duration and whose caller commits, and a run
skipped for want of a judge records no duration either.
"""

from __future__ import annotations

import time
from datetime import datetime

from sqlalchemy.orm import Session

from collector.store.models import JobState


def load_state(session: Session, job: str) -> JobState:
    """The job's row, or a new one (stored by the `session.merge` that records the run)."""
    return session.get(JobState, job) or JobState(job=job)


def record_run(
    session: Session,
    state: JobState,
    now: datetime,
    message: str,
    *,
    started: float,
    status: str = "ok",
) -> None:
    """Record in `state` a run at `now` that began at `started` (`time.perf_counter()`),
    and commit it with what the run wrote in `session`."""
    state.last_run_at = now
    state.last_status = status
    state.last_message = message
    state.last_duration_s = time.perf_counter() - started
    session.merge(state)
    session.commit()
