"""`ragpulse run`: the service, until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from collector.errors import UserError
from collector.settings import load_settings

logger = logging.getLogger(__name__)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run the service: consume traces into the database until stopped",
        description="Consume the configured Kafka topics into the configured database "
        "until SIGTERM or Ctrl-C; then finish and commit the batch in hand and exit 0. "
        "Delivery is at-least-once with idempotent writes; when the database is away the "
        "batch is retried with backoff and nothing is committed or lost. A SQLite database "
        "is migrated automatically; PostgreSQL only with --migrate.",
    )
    parser.add_argument(
        "--migrate", action="store_true", help="apply database migrations before starting"
    )
    parser.add_argument(
        "--role",
        choices=["all", "consumer", "scheduler", "jobs", "exporter", "receiver"],
        default="all",
        help="which parts to run: all (default), consumer (Kafka -> SQL, serves its "
        "counters on /metrics), scheduler (evaluation jobs + /metrics), jobs (one of "
        "several evaluation workers sharing the jobs on PostgreSQL; /metrics serves its "
        "own counters), exporter (/metrics from the stored results only) or receiver (the "
        "OTLP/HTTP receiver, no database: the same as `ragpulse receive`)",
    )
    parser.add_argument(
        "--wait-for-kafka",
        metavar="DURATION",
        default="5s",
        help="how long to wait for a Kafka broker to listen before giving up with one line "
        "(default 5s; e.g. 2m for containers that start together); nothing, not even the "
        "database, is set up before Kafka answers",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from collector.ingest.kafka import quiet_client_logs

    quiet_client_logs()
    settings = load_settings(args.config)
    role = getattr(args, "role", "all")
    if role == "receiver":
        from ragpulse.commands.receive import receive

        return receive(settings)
    from collector.ingest.kafka.client import KafkaUnavailableError
    from ragpulse.service import Service, StartupError, prepare_database

    if role in ("all", "consumer"):
        from collector.ingest.kafka.reachable import wait_for_kafka
        from collector.settings.durations import parse_duration

        try:
            wait_s = parse_duration(getattr(args, "wait_for_kafka", "5s"))
        except ValueError as exc:
            raise UserError(f"--wait-for-kafka: {exc}") from None
        try:
            wait_for_kafka(settings.kafka.bootstrap_servers, wait_s)
        except KafkaUnavailableError as exc:
            raise UserError(str(exc)) from None
    try:
        prepare_database(settings.database.url.get_secret_value(), migrate=args.migrate)
    except StartupError as exc:
        print(f"ragpulse run: {exc}", file=sys.stderr)
        return 1
    service = Service(settings)
    from ragpulse.monitoring import Monitoring

    service.consume = role in ("all", "consumer")
    service.add(
        Monitoring(settings, service.engine, service.registry, role=role, consumer=service.consumer)
    )
    service.install_signal_handlers()
    logger.info(
        "consuming %s from %s as group %s",
        ",".join(settings.kafka.topics),
        ",".join(settings.kafka.bootstrap_servers),
        settings.kafka.group_id,
    )
    try:
        totals = service.run()
    except KafkaUnavailableError as exc:
        print(f"ragpulse run: {exc}", file=sys.stderr)
        return 1
    logger.info(
        "stopped: consumed %d, stored %d, duplicates %d, invalid %d, sampled %d",
        totals.consumed,
        totals.stored,
        totals.duplicates,
        totals.invalid,
        totals.sampled,
    )
    return 0
