"""`ragpulse` command line: a thin dispatcher; each command lives in `ragpulse/commands/`.

A command module defines `register(subparsers) -> None`, which adds its parser and sets
`func` to a callable taking the parsed namespace and returning the exit code. Modules are
imported only when the CLI starts, so `--help` stays fast and nothing connects at import.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import logging
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

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
    "topics",
    "sessions",
    "explain",
    "compare",
    "inspect",
    "slo",
)


class Parser(argparse.ArgumentParser):
    """argparse with a "did you mean" for a mistyped command or choice."""

    def error(self, message: str) -> NoReturn:
        found = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if found:
            choices = re.findall(r"'([^']*)'", found.group(2)) or found.group(2).split(", ")
            close = difflib.get_close_matches(found.group(1), choices, n=1, cutoff=0.6)
            if close:
                message += f"; did you mean {close[0]!r}?"
        super().error(message)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
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
    subparsers = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=Parser
    )
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
    _use_running_demo(args)
    try:
        code: int = args.func(args)
    except (UserError, ConfigError) as exc:
        # Something the user can fix: what and how, without a traceback.
        print(f"ragpulse: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `ragpulse traces ... | head`: the reader has what they wanted; no traceback, and
        # none either when the interpreter flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    return code


EXIT_BROKEN_PIPE = 141
"""128 + SIGPIPE, what a shell reports for a command whose reader went away."""


NOT_FROM_DEMO = frozenset({"demo", "broker", "run"})
"""Commands that never take a running demo's settings: the demo itself, and the service and
broker, which a user starts for their own configuration."""


def _use_running_demo(args: argparse.Namespace) -> None:
    """Without --config, a command started where `ragpulse demo` runs uses its settings."""
    if args.config is not None or args.command in NOT_FROM_DEMO:
        return
    from ragpulse.demo.handoff import running_demo

    demo = running_demo(Path.cwd())
    if demo is not None:
        args.config = str(demo.settings)
        args.demo = demo
        print(
            f"ragpulse: using the running demo's settings ({demo.settings}); "
            "--config or RAGPULSE_* variables choose others",
            file=sys.stderr,
        )


if __name__ == "__main__":
    sys.exit(main())
