"""`ragpulse` command line: a thin dispatcher; each command lives in `ragpulse/commands/`.

A command module defines `register(subparsers) -> None`, which adds its parser and sets
`func` to a callable taking the parsed namespace and returning the exit code. Modules are
imported only when the CLI starts, so `--help` stays fast and nothing connects at import.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from collector.errors import EXIT_USER_ERROR, UserError
from collector.settings import ConfigError

COMMANDS = (
    "run",
    "ingest",
    "jobs",
    "evaluate",
    "produce",
    "receive",
    "broker",
    "demo",
    "migrate",
    "report",
    "plan",
    "traces",
    "explain",
    "compare",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragpulse",
        description=(
            "Watch the quality of a production RAG system: consume traces from Kafka, "
            "store them, compute quality metrics on a schedule and export them to "
            "Prometheus. Settings come from RAGPULSE_* environment variables "
            "(RAGPULSE_DATABASE__URL, RAGPULSE_KAFKA__BOOTSTRAP_SERVERS, ...) or --config."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--config", metavar="FILE.yaml", help="YAML settings file (environment variables win)"
    )
    parser.add_argument(
        "--log-level",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="logging level (default: the log_level setting, INFO)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"ragpulse.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"ragpulse.commands.{name}":
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=args.log_level or "INFO",
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if (args.log_level or "INFO") != "DEBUG":
        # Their INFO lines (plugin set-up, every job start/finish) drown our own summaries.
        for noisy in ("alembic", "apscheduler", "LiteLLM", "httpx"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        code: int = args.func(args)
    except (UserError, ConfigError) as exc:
        # Something the user can fix: what and how, without a traceback.
        print(f"ragpulse: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
