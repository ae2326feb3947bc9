"""`ragpulse ingest`: consume until the topics go quiet, then print a JSON summary."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from typing import Any

from collector.settings import Settings, load_settings


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "ingest",
        help="consume traces until no message arrives for a while, then print a summary",
        description="Consume the configured topics (RAGPULSE_KAFKA__*) into the configured "
        "database (RAGPULSE_DATABASE__URL) in the configured consumer group, committing "
        "offsets after each stored batch, until no message arrived for --until-idle "
        'seconds. Prints {"consumed", "stored", "duplicates", "invalid", "sampled"} '
        "as JSON on stdout. A SQLite database is migrated automatically; PostgreSQL only "
        "with --migrate (otherwise its schema must be current). On PostgreSQL, "
        "--workers N runs N consumer processes in the group (one Python process uses at "
        "most one core) and prints their summed summary.",
    )
    parser.add_argument(
        "--until-idle",
        type=float,
        required=True,
        metavar="SECONDS",
        help="stop once no message arrived for this many seconds while holding the same "
        "partitions (an assignment or a rebalance restarts the count)",
    )
    parser.add_argument(
        "--migrate", action="store_true", help="apply database migrations before consuming"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="consumer processes in the group (default 1; PostgreSQL only; more than the "
        "topics' partitions leaves some idle)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.until_idle <= 0:
        print("ragpulse ingest: --until-idle must be positive", file=sys.stderr)
        return 2
    if args.workers < 1:
        print("ragpulse ingest: --workers must be at least 1", file=sys.stderr)
        return 2
    settings = load_settings(args.config)
    if args.workers > 1:
        return _run_workers(args, settings)

    from collector.kafka import quiet_client_logs

    quiet_client_logs()
    from collector.kafka.consumer import KafkaUnavailableError
    from collector.service import Service, StartupError, prepare_database

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


def _run_workers(args: argparse.Namespace, settings: Settings) -> int:
    """Supervise --workers consumer processes; this process stays small (no database or
    Kafka client of its own: a migration, if asked for, runs as `ragpulse migrate`)."""
    from sqlalchemy.engine import make_url

    from collector.kafka.workers import (
        WorkerFailedError,
        cli_command,
        combined_summary,
        run_workers,
        worker_command,
    )

    if make_url(settings.database.url.get_secret_value()).get_backend_name() != "postgresql":
        print(
            "ragpulse ingest: --workers above 1 needs PostgreSQL (SQLite takes one writer "
            "at a time, so more processes would only wait on its lock)",
            file=sys.stderr,
        )
        return 2
    migrate = cli_command("migrate", config=args.config)
    if args.migrate and subprocess.run(migrate, stdout=subprocess.DEVNULL).returncode:
        print("ragpulse ingest: the migration failed", file=sys.stderr)
        return 1
    command = worker_command(args.until_idle, config=args.config, log_level=args.log_level)
    try:
        summary = combined_summary(run_workers(command, args.workers))
    except WorkerFailedError as exc:
        print(f"ragpulse ingest: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(summary), flush=True)
    return 0
