"""`ragpulse ingest`: consume until the topics go quiet, then print a JSON summary."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from collector.settings import load_settings


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "ingest",
        help="consume traces until no message arrives for a while, then print a summary",
        description="Consume the configured topics (RAGPULSE_KAFKA__*) into the configured "
        "database (RAGPULSE_DATABASE__URL) in the configured consumer group, committing "
        "offsets after each stored batch, until no message arrived for --until-idle "
        'seconds. Prints {"consumed", "stored", "duplicates", "invalid", "sampled"} '
        "as JSON on stdout. A SQLite database is migrated automatically; PostgreSQL only "
        "with --migrate (otherwise its schema must be current).",
    )
    parser.add_argument(
        "--until-idle",
        type=float,
        required=True,
        metavar="SECONDS",
        help="stop once no message arrived for this many seconds (counted from the moment "
        "partitions are assigned)",
    )
    parser.add_argument(
        "--migrate", action="store_true", help="apply database migrations before consuming"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from collector.kafka import quiet_client_logs

    quiet_client_logs()
    from collector.kafka.consumer import KafkaUnavailableError
    from collector.service import Service, StartupError, prepare_database

    if args.until_idle <= 0:
        print("ragpulse ingest: --until-idle must be positive", file=sys.stderr)
        return 2
    settings = load_settings(args.config)
    try:
        prepare_database(settings.database.url.get_secret_value(), migrate=args.migrate)
        service = Service(settings)
        service.install_signal_handlers()
        service.run(idle_timeout_s=args.until_idle)
    except (StartupError, KafkaUnavailableError) as exc:
        print(f"ragpulse ingest: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(service.stats.summary()), flush=True)
    return 0
