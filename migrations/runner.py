"""Run Alembic migrations programmatically (`ragpulse migrate`, tests, demo start-up)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).resolve().parent
"""This folder: Alembic's environment (`env.py`) and its revisions (`versions/`)."""


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    # ConfigParser interpolation would eat a '%' in a password.
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    """Bring the database at `url` to `revision` (idempotent)."""
    command.upgrade(alembic_config(url), revision)


def current_heads() -> tuple[str, ...]:
    from alembic.script import ScriptDirectory

    return tuple(ScriptDirectory.from_config(alembic_config("sqlite://")).get_heads())


def database_heads(url: str) -> set[str]:
    """The revisions the database at `url` is at (empty: not migrated); one short connection."""
    from alembic.runtime.migration import MigrationContext

    from collector.store.session import make_engine

    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return set(MigrationContext.configure(conn).get_current_heads())
    finally:
        engine.dispose()
