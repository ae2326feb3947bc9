"""The store side of `ragpulse report`'s conversations section."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine
from sqlalchemy.orm import Session

logger = logging.getLogger(__name__)

DEFAULT_S = 7 * 86400.0
"""The section's window when the report has no --since (as the topics sections')."""


def store_conversations(engine: Engine, now: float, since_s: float | None) -> str:
    """The section's HTML over the `since_s` seconds before `now` (7 days by default);
    empty when the store cannot say (logged)."""
    from collector.jobs.queries.session_overview import session_overview
    from exporters.report.conversations import conversations_section

    until = datetime.fromtimestamp(now, UTC)
    since = until - timedelta(seconds=since_s or DEFAULT_S)
    try:
        with Session(engine) as session:
            seen = session_overview(session, since, until)
    except Exception:
        logger.exception("could not read the conversations from the store")
        return ""
    return conversations_section(seen)
