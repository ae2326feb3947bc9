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
        "RAGPULSE_DATABASE__URL (default sqlite:///ragpulse.db). Safe to run repeatedly.",
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
    print(f"database is at revision {args.revision}")
    return 0
