from __future__ import annotations

from sqlalchemy import inspect

from collector.store.session import make_engine
from migrations.runner import upgrade

TABLES = {"traces", "feedback", "dead_letters", "samples", "metric_results", "judgments", "runs"}


def test_migrations_create_every_table_and_are_idempotent(db_url: str) -> None:
    upgrade(db_url)  # second time: nothing to do, no error
    engine = make_engine(db_url)
    try:
        assert set(inspect(engine).get_table_names()) >= TABLES
    finally:
        engine.dispose()


def test_models_match_migrations(db_url: str) -> None:
    """The models and the revisions agree: autogenerate finds nothing to change."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from collector.store.models import Base
    from migrations.objects import comparison_hooks

    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            opts = {"compare_type": False, **comparison_hooks(engine.dialect.name)}
            ctx = MigrationContext.configure(conn, opts=opts)
            diff = compare_metadata(ctx, Base.metadata)
    finally:
        engine.dispose()
    assert diff == []
