"""`ragpulse inspect FILE` / `--last N` / `--trace-id ID`: what ragpulse makes of OTLP spans.

Before pointing ragpulse at an instrumented app (or when its traces arrive without answers),
show what its spans become: per trace, the stored record (question, answer, contexts with
id/score/url, session, user, model, usage, stage latencies, tags), the conventions read and
the fields missing, and per span the attributes used and left unread. Nothing is stored
and no consumer group is joined.

A trace's spans are often in several messages (the SDK exports them as they end, the
root last), so `--last N` also reads up to `--look-back` older messages of each partition
and completes the traces of those N with their spans found there: a trace is judged on all
its spans, as the ingest (which merges every fragment) stores it, not on the part that
happened to be among the last N. Only the traces with a span in the last N are shown.
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
LOOK_BACK = 1000
"""Older messages per partition read for the spans of the traces shown (`--look-back`)."""


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
        "and per span the attributes used and left unread. A trace is judged on all its "
        "spans found: with --last N, the --look-back M messages before those N are read "
        "too, for the spans its app sent earlier; --trace-id ID searches for one trace's "
        "spans wherever they are among the messages read. Nothing is stored.",
        epilog="examples:\n  ragpulse inspect captured.pb\n"
        "  kcat -C -t otlp_spans -o -1 -e -D '' | ragpulse inspect -\n"
        "  ragpulse inspect --last 20 --json\n"
        "  ragpulse inspect --trace-id 4bf92f3577b34da6a3ce929d0e0e4736 --look-back 5000\n"
        "  ragpulse inspect --last 30 --store   # with the spans the service already stored\n"
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
        "--topic",
        metavar="NAME",
        help="topic for --last / --trace-id (default: the kafka.otlp_topic setting)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="reading the topic: give up reaching Kafka, and reading, after this long "
        "(default 5; the --look-back read gets as long again)",
    )
    parser.add_argument(
        "--trace-id",
        metavar="ID",
        help="only this trace (hex, or its first digits), with all its spans found: in the "
        "FILEs, or in the "
        "last --look-back messages of each partition of the topic (with --last N: among "
        "the traces of those N)",
    )
    parser.add_argument(
        "--look-back",
        type=int,
        default=LOOK_BACK,
        metavar="M",
        help="with --last N: also read the M messages before those N in each partition, "
        "for the spans of the traces shown that were sent earlier (a retriever's span "
        "often leaves before its root's), so a trace is judged on all its spans; with "
        "--trace-id alone: how many of the newest messages of each partition to search "
        f"(default {LOOK_BACK}; 0 reads the N alone)",
    )
    parser.add_argument(
        "--store",
        action="store_true",
        help="also merge the spans the database (RAGPULSE_DATABASE__URL) holds for the "
        "traces shown: those the service consumed from messages no longer read (with "
        "--trace-id, a trace stored but gone from the topic is shown from the store alone)",
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
    if args.last is None and not args.files and not args.trace_id:
        raise UserError(
            "nothing to inspect: give a FILE (or '-' for stdin), --last N or --trace-id ID"
        )
    if args.timeout <= 0:
        raise UserError(f"--timeout must be positive, got {args.timeout}")
    if args.look_back < 0:
        raise UserError(f"--look-back must be 0 or more, got {args.look_back}")
    wanted = _trace_id(args.trace_id) if args.trace_id else None
    kafka = settings.kafka
    topic = args.topic or kafka.otlp_topic
    shown: set[str] | None = None  # the sources whose traces are shown (None: all)
    messages: list[tuple[str, bytes | None]]
    if args.files:
        messages = [m for path in args.files for m in read_capture(path)]
    elif args.last is not None:
        newer = _from_kafka(settings, topic, args.last, args.timeout)
        shown = {source for source, _ in _pairs(newer)}
        older = _older(settings, topic, newer, args.look_back, args.timeout)
        messages = _pairs(older) + _pairs(newer)
    else:
        if args.look_back < 1:
            raise UserError("--trace-id without --last searches --look-back M messages: M >= 1")
        messages = _pairs(_from_kafka(settings, topic, args.look_back, args.timeout))
    if not messages and not (args.store and wanted):
        raise UserError("no message to inspect (the topic is empty)")

    def read(stored: dict[str, Any] | None = None) -> tuple[list[Any], list[Any]]:
        found = inspect_messages(
            messages,
            kafka.otlp_encoding,
            kafka.max_message_bytes,
            settings.decode.max_depth,
            stored=stored,
        )
        traces, errors = found.traces, found.errors
        if shown is not None:  # the older messages only complete the traces of the newer
            traces = [t for t in traces if shown.intersection(t.sources)]
            errors = [e for e in errors if e.source in shown]
        return traces, errors

    traces, errors = read()
    if args.store:
        ids = {t.trace_id for t in traces if wanted is None or t.trace_id.startswith(wanted)}
        if wanted is not None and len(wanted) == 32:
            ids.add(wanted)
        stored = _stored_spans(settings, ids)
        if stored:
            traces, errors = read(stored)
    for error in errors:
        print(f"ragpulse inspect: {error.source}: {error.reason}: {error.detail}", file=sys.stderr)
    if wanted is not None:
        traces = [t for t in traces if t.trace_id.startswith(wanted)]
        if not traces:
            where = (
                ", ".join(args.files)
                if args.files
                else f"the last {args.last if args.last is not None else args.look_back} "
                f"messages of each partition of {topic!r}"
            )
            further = "" if args.files else "; a larger --look-back searches further back"
            store = "" if args.store else "; --store adds the spans the database holds"
            raise UserError(
                f"no span of trace {wanted} in {where} (as stored, if it was consumed: "
                f"`ragpulse traces show {wanted}`{store}{further})"
            )
    elif not traces:
        if not errors:
            raise UserError("no OTLP trace among the messages read")
        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise UserError(
            f"{first.source} is not an OTLP trace message ({first.reason}: {first.detail}){more}"
        )
    try:
        for i, trace in enumerate(traces):
            if args.json:
                print(json.dumps(trace.as_json(), ensure_ascii=False))
                continue
            if i:
                print()
            print("\n".join(render_trace(trace)))
        sys.stdout.flush()
    except BrokenPipeError:  # `ragpulse inspect ... | head`: the reader has seen enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 1 if errors else 0


def _stored_spans(settings: Any, trace_ids: set[str]) -> dict[str, Any]:
    """Trace id -> the span summaries the store holds (OTLP traces among `trace_ids`)."""
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from collector.store.models import Trace
    from collector.store.session import make_engine
    from ragpulse.store_check import require_migrated

    if not trace_ids:
        return {}
    url = settings.database.url.get_secret_value()
    require_migrated(url)
    engine = make_engine(url)
    try:
        with Session(engine) as session:
            rows = session.execute(
                select(Trace.trace_id, Trace.spans).where(
                    Trace.trace_id.in_(sorted(trace_ids)), Trace.source == "otlp"
                )
            ).all()
    finally:
        engine.dispose()
    return {trace_id: spans for trace_id, spans in rows if spans}


def _trace_id(text: str) -> str:
    """A trace id (or its first digits) as the decoder writes it: lowercase hex, no dashes."""
    from collector.errors import UserError

    tid = text.strip().lower().replace("-", "")
    if not tid or any(c not in "0123456789abcdef" for c in tid):
        raise UserError(f"--trace-id wants a hex trace id, got {text!r}")
    return tid


def _pairs(raw: list[Any]) -> list[tuple[str, bytes | None]]:
    return [(f"{m.topic}/{m.partition}@{m.offset}", m.value) for m in raw]


def _older(settings: Any, topic: str, newer: list[Any], count: int, timeout_s: float) -> list[Any]:
    """The `count` messages before `newer` in each of its partitions (none when 0)."""
    if count < 1 or not newer:
        return []
    first: dict[int, int] = {}
    for m in newer:
        first[m.partition] = min(first.get(m.partition, m.offset), m.offset)
    return _from_kafka(settings, topic, count, timeout_s, before=first)


def _from_kafka(
    settings: Any,
    topic: str,
    count: int,
    timeout_s: float,
    before: dict[int, int] | None = None,
) -> list[Any]:
    from collector.errors import UserError
    from collector.ingest.kafka import quiet_client_logs

    quiet_client_logs()
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        # the client logs every failed connection attempt; the one-line error says it all
        logging.getLogger("kafka").setLevel(logging.CRITICAL)
    from collector.ingest.kafka.client import KafkaUnavailableError
    from collector.ingest.kafka.tail import last_messages

    try:
        return last_messages(settings.kafka, topic, count, timeout_s, before=before)
    except KafkaUnavailableError as exc:
        raise UserError(f"{exc} (check RAGPULSE_KAFKA__BOOTSTRAP_SERVERS)") from None


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
