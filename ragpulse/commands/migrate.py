"""`ragpulse migrate`: bring the configured database to the newest schema."""

from __future__ import annotations

import argparse
from typing import Any

from collector.settings import load_settings


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "migrate",
        help="apply database migrations (alembic upgrade head)",
        description="Create or upgrade the schema of the database named by "
        "RAGPULSE_DATABASE__URL (default sqlite:///ragpulse.db), and on PostgreSQL make the "
        "daily partitions of the coming database.partitions_ahead days. Safe to run "
        "repeatedly.",
    )
    parser.add_argument("--revision", default="head", help="target revision (default: head)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from migrations.runner import upgrade
    from ragpulse.store_check import database_errors, require_creatable

    settings = load_settings(args.config)
    url = settings.database.url.get_secret_value()
    require_creatable(url)
    with database_errors(url):
        upgrade(url, args.revision)
        made = _partitions_ahead(url, settings.database.partitions_ahead)
    print(f"database is at revision {args.revision}")
    if made:
        print(f"made {len(made)} partitions ahead ({made[0]} .. {made[-1]})")
    return 0


def _partitions_ahead(url: str, ahead: int) -> list[str]:
    """PostgreSQL: the daily partitions of the coming days, so the service need not wait
    for its first hourly maintenance (nothing on SQLite, or below revision 0011)."""
    from datetime import UTC, datetime

    from collector.store.maintenance import make_partitions
    from collector.store.session import make_engine

    engine = make_engine(url)
    try:
        return make_partitions(engine, datetime.now(UTC), ahead)
    finally:
        engine.dispose()
