"""Where ragpulse stores everything (`database`): the URL, the pool, the trace
retention and the PostgreSQL partitions made ahead."""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator

from collector.settings.durations import parse_duration
from collector.settings.fields import Group


class DatabaseSettings(Group):
    url: SecretStr = SecretStr("sqlite:///ragpulse.db")
    """SQLAlchemy URL of the store: sqlite:///FILE or
    postgresql+psycopg://USER:PASSWORD@HOST:PORT/DB."""
    echo: bool = False
    """Log every SQL statement (SQLAlchemy echo), for debugging."""
    pool_size: int = Field(5, ge=1)
    """Connections kept open in the pool (PostgreSQL)."""
    retention: str | None = None
    """Traces whose timestamp is older than this are removed every hour by the scheduler,
    with their per-job outcomes and the samples, feedback, human labels, evaluation events
    and judgments of them (`collector/store/retention.py`); unset (the default): traces
    are kept forever. PostgreSQL drops whole daily partitions, so up to a day more is
    kept. At least the longest scheduler window."""
    partitions_ahead: int = Field(7, ge=1, le=366)
    """PostgreSQL: days ahead for which the daily partitions of traces and job_outcomes are
    made (every hour by the scheduler, and by `ragpulse migrate`); traces of a day without
    one wait in the default partition until it is made."""

    @field_validator("retention")
    @classmethod
    def _retention(cls, value: str | None) -> str | None:
        if value is not None:
            parse_duration(value)
        return value

    @field_validator("url")
    @classmethod
    def _known_backend(cls, value: SecretStr) -> SecretStr:
        raw = value.get_secret_value()
        if not raw.startswith(("sqlite", "postgresql")):
            raise ValueError("must be a sqlite:/// or postgresql+psycopg:// URL")
        return value
