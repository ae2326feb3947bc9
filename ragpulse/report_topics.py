"""The store side of `ragpulse report`'s topics and knowledge-gap sections."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from collector.settings import Settings

logger = logging.getLogger(__name__)

DEFAULT_S = 7 * 86400.0
"""The sections' window when the report has no --since: the week the gap list needs."""


def store_topics(settings: Settings, engine: Engine, now: float, since_s: float | None) -> str:
    """The sections' HTML over the `since_s` seconds before `now` (7 days by default);
    empty when the store cannot say (logged)."""
    from collector.jobs.queries.topic_overview import overview
    from exporters.report.topics import topics_section

    until = datetime.fromtimestamp(now, UTC)
    since = until - timedelta(seconds=since_s or DEFAULT_S)
    try:
        with Session(engine) as session:
            seen = overview(session, settings.topics, since, until, signals=True)
    except Exception:
        logger.exception("could not read the topics from the store")
        return ""
    return topics_section(seen)
