"""Wiring of the quality SLOs (`collector/settings/slo.py`) into a service process.

A process that schedules jobs records the SLOs' events of every run
(`SloEventRecorder`, an outcome observer) and, at start, catches up on outcomes stored
while no recorder ran (`reconcile` over `slo.event_retention`); a process that exports the
quality series serves `ragpulse_slo_events_total` from the stored counts. Without SLOs
nothing is wired.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from sqlalchemy.orm import Session, sessionmaker

from collector.jobs.scheduler import metric_jobs
from collector.settings import Settings, parse_duration
from collector.slo.events import SloEventRecorder, prune, reconcile

logger = logging.getLogger(__name__)


def slo_recorder(settings: Settings, factory: sessionmaker[Session]) -> SloEventRecorder | None:
    """The observer recording the SLOs' events (None: no SLO declared)."""
    specs = settings.slo.specs()
    if not specs:
        return None
    return SloEventRecorder(specs, factory, settings.slo.max_tenants)


def catch_up(
    settings: Settings, factory: sessionmaker[Session], now: datetime | None = None
) -> int:
    """Record the events of stored outcomes no recorder saw, drop events past their
    retention; returns the events added. Idempotent: safe at every start."""
    specs = settings.slo.specs()
    if not specs:
        return 0
    now = now or datetime.now(UTC)
    since = now - timedelta(seconds=parse_duration(settings.slo.event_retention))
    with factory() as session, session.begin():
        added = reconcile(session, specs, metric_jobs(settings), since, settings.slo.max_tenants)
        prune(session, since)
    logger.info("SLO events: %d recorded from stored outcomes at start", added)
    return added
