"""`ragpulse inspect FILE` / `ragpulse inspect --last N`: what ragpulse makes of OTLP spans.

Before pointing ragpulse at an instrumented app (or when its traces arrive without answers),
show what its spans become: per trace, the stored record (question, answer, contexts with
id/score/url, session, user, model, usage, stage latencies, tags), the conventions read and
the fields missing, and per span the attributes used and left unread. Nothing is stored
and no consumer group is joined.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import logging
import os
import sys
import zlib
from pathlib import Path
from typing import Any

from collector.settings import load_settings

GUNZIP_LIMIT = 256 * 1024 * 1024
"""A gzipped capture is refused past this many bytes uncompressed (no gzip bomb)."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "inspect",
        help="show what captured OTLP span messages become: traces, conventions, attributes",
        description="Read OTLP trace messages as the OpenTelemetry Collector's Kafka "
        "exporter writes them (protobuf or JSON, sniffed; a file may be gzipped, and a "
        "JSON file may hold one message per line) from files, or the last N messages of "
        "each partition of the OTLP topic (no consumer group is joined, no offset "
        "committed), and print per trace the record ragpulse would store, the "
        "conventions its spans were read with (as counted by "
        "ragpulse_otlp_traces_total), the fields it lacks (question, answer, contexts) "
        "and per span the attributes used and left unread. Nothing is stored.",
        epilog="examples:\n  ragpulse inspect captured.pb\n"
        "  kcat -C -t otlp_spans -o -1 -e -D '' | ragpulse inspect -\n"
        "  ragpulse inspect --last 20 --json\n"
        "exit codes: 0 every message read; 1 some were not OTLP trace messages (named on "
        "stderr); 2 nothing to read (missing file, empty topic, no OTLP message at all).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "files", nargs="*", metavar="FILE", help="captured message(s); '-' reads stdin"
    )
    parser.add_argument(
        "--last",
        type=int,
        metavar="N",
        help="read the last N messages of every partition of the topic instead of files",
    )
    parser.add_argument(
        "--topic", metavar="NAME", help="topic for --last (default: the kafka.otlp_topic setting)"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="with --last: give up reaching Kafka, and reading, after this long (default 5)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per trace per line")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from collector.errors import UserError
    from collector.ingest.otlp_inspect import inspect_messages
    from ragpulse.inspect_render import render_trace

    settings = load_settings(args.config)
    if args.last is not None and args.files:
        raise UserError("give FILEs or --last N, not both")
    if args.last is None and not args.files:
        raise UserError("nothing to inspect: give a FILE (or '-' for stdin), or --last N")
    if args.timeout <= 0:
        raise UserError(f"--timeout must be positive, got {args.timeout}")
    kafka = settings.kafka
    if args.last is not None:
        messages = _from_kafka(settings, args.topic or kafka.otlp_topic, args.last, args.timeout)
    else:
        messages = [m for path in args.files for m in read_capture(path)]
    if not messages:
        raise UserError("no message to inspect (the topic is empty)")
    found = inspect_messages(
        messages, kafka.otlp_encoding, kafka.max_message_bytes, settings.decode.max_depth
    )
    for error in found.errors:
        print(f"ragpulse inspect: {error.source}: {error.reason}: {error.detail}", file=sys.stderr)
    if not found.traces:
        first = found.errors[0]
        more = f" (and {len(found.errors) - 1} more)" if len(found.errors) > 1 else ""
        raise UserError(
            f"{first.source} is not an OTLP trace message ({first.reason}: {first.detail}){more}"
        )
    try:
        for i, trace in enumerate(found.traces):
            if args.json:
                print(json.dumps(trace.as_json(), ensure_ascii=False))
                continue
            if i:
                print()
            print("\n".join(render_trace(trace)))
        sys.stdout.flush()
    except BrokenPipeError:  # `ragpulse inspect ... | head`: the reader has seen enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 1 if found.errors else 0


def _from_kafka(settings: Any, topic: str, count: int, timeout_s: float) -> list[Any]:
    from collector.errors import UserError
    from collector.ingest.kafka import quiet_client_logs

    quiet_client_logs()
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        # the client logs every failed connection attempt; the one-line error says it all
        logging.getLogger("kafka").setLevel(logging.CRITICAL)
    from collector.ingest.kafka.client import KafkaUnavailableError
    from collector.ingest.kafka.tail import last_messages

    try:
        raw = last_messages(settings.kafka, topic, count, timeout_s)
    except KafkaUnavailableError as exc:
        raise UserError(f"{exc} (check RAGPULSE_KAFKA__BOOTSTRAP_SERVERS)") from None
    return [(f"{m.topic}/{m.partition}@{m.offset}", m.value) for m in raw]


def read_capture(path: str) -> list[tuple[str, bytes]]:
    """The messages of one captured file (or stdin for '-'): one protobuf or JSON message,
    or JSON messages one per line; gunzipped first when gzipped."""
    from collector.errors import UserError

    if path == "-":
        data = sys.stdin.buffer.read()
    else:
        try:
            data = Path(path).read_bytes()
        except FileNotFoundError:
            raise UserError(f"no such file: {path}") from None
        except OSError as exc:
            raise UserError(f"cannot read {path}: {exc.strerror or exc}") from None
    if data[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as unzipped:
                data = unzipped.read(GUNZIP_LIMIT + 1)
        except (OSError, EOFError, zlib.error) as exc:
            raise UserError(f"{path} looks gzipped but does not gunzip: {exc}") from None
        if len(data) > GUNZIP_LIMIT:
            raise UserError(f"{path} unzips to more than {GUNZIP_LIMIT} bytes")
    lines = [line.strip() for line in data.split(b"\n") if line.strip()]
    if len(lines) > 1 and all(line[:1] == b"{" and line[-1:] == b"}" for line in lines):
        return [(f"{path}#{n}", line) for n, line in enumerate(lines, 1)]
    return [(path, data)]
