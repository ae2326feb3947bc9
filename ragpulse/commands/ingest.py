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
        'seconds. Prints {"consumed", "stored", "duplicates", "feedback", "invalid", '
        '"sampled", "unstored"} as JSON on stdout (consumed = stored + duplicates + '
        "feedback + invalid; unstored = of invalid, records the database refused). Exits "
        "3 (summary printed) when it stops with records it could not store: refused by the "
        "database (in dead_letters, reason store_error:...) or a batch still failing when "
        "stopped. A SQLite database is migrated automatically; PostgreSQL only "
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

    from collector.ingest.kafka import quiet_client_logs

    quiet_client_logs()
    from collector.ingest.kafka.client import KafkaUnavailableError
    from ragpulse.service import Service, StartupError, prepare_database

    try:
        prepare_database(settings.database.url.get_secret_value(), migrate=args.migrate)
        service = Service(settings)
        service.install_signal_handlers()
        service.run(idle_timeout_s=args.until_idle)
    except (StartupError, KafkaUnavailableError) as exc:
        print(f"ragpulse ingest: {exc}", file=sys.stderr)
        return 1
    summary = service.stats.summary()
    print(json.dumps(summary), flush=True)
    return _unstored_exit(summary, service.consumer.health())


def _unstored_exit(summary: dict[str, int], health: Any) -> int:
    """EXIT_UNSTORED, with the reason on stderr, when records could not be stored."""
    from collector.ingest.kafka.workers import EXIT_UNSTORED

    problems = []
    if summary["unstored"]:
        problems.append(
            f"{summary['unstored']} record(s) refused by the database (see dead_letters, "
            "reason store_error:...)"
        )
    if health.failures:
        problems.append(
            f"stopped while the batch at {health.where()} was failing ({health.failures} "
            f"attempts, last error: {health.error}); it stays uncommitted"
        )
    if not problems:
        return 0
    print(f"ragpulse ingest: {'; '.join(problems)}", file=sys.stderr)
    return EXIT_UNSTORED


def _run_workers(args: argparse.Namespace, settings: Settings) -> int:
    """Supervise --workers consumer processes; this process stays small (no database or
    Kafka client of its own: a migration, if asked for, runs as `ragpulse migrate`)."""
    from sqlalchemy.engine import make_url

    from collector.ingest.kafka.workers import (
        EXIT_UNSTORED,
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
        results = run_workers(command, args.workers)
        summary = combined_summary(results)
    except WorkerFailedError as exc:
        print(f"ragpulse ingest: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(summary), flush=True)
    unstored = [str(r.index + 1) for r in results if r.returncode == EXIT_UNSTORED]
    if unstored:
        print(
            f"ragpulse ingest: worker(s) {', '.join(unstored)} stopped with records they "
            "could not store",
            file=sys.stderr,
        )
        return EXIT_UNSTORED
    return 0
