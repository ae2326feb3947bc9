"""`ragpulse produce`: publish the lines of a JSONL file to Kafka (demo and load tests)."""

from __future__ import annotations

import argparse
import itertools
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

from collector.settings import load_settings


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "produce",
        help="publish a JSONL file's records to Kafka",
        description="Publish every non-blank line of FILE.jsonl as one Kafka message, byte "
        "for byte (malformed lines are sent as they are, which exercises dead letters). "
        "Uses RAGPULSE_KAFKA__BOOTSTRAP_SERVERS; a progress bar goes to stderr.",
    )
    parser.add_argument("file", metavar="FILE.jsonl", help="records to publish, one per line")
    parser.add_argument(
        "--topic", help="topic to publish to (default: the first of the kafka.topics setting)"
    )
    parser.add_argument(
        "--rate", type=float, help="at most this many messages per second (default: unlimited)"
    )
    parser.add_argument(
        "--loop", action="store_true", help="publish the file again and again until Ctrl-C"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from collector.ingest.kafka import quiet_client_logs

    quiet_client_logs()
    from kafka.errors import KafkaError
    from tqdm import tqdm

    from collector.ingest.kafka.producer import iter_jsonl, make_producer, publish

    settings = load_settings(args.config)
    path = Path(args.file)
    if not path.is_file():
        print(f"ragpulse produce: no such file: {path}", file=sys.stderr)
        return 2
    if args.rate is not None and args.rate <= 0:
        print("ragpulse produce: --rate must be positive", file=sys.stderr)
        return 2
    topic = args.topic or settings.kafka.topics[0]
    stop = threading.Event()

    def handler(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    total = None if args.loop else sum(1 for _ in iter_jsonl(path))
    messages: Iterator[bytes]
    if args.loop:
        messages = itertools.chain.from_iterable(iter_jsonl(path) for _ in itertools.count())
    else:
        messages = iter_jsonl(path)
    try:
        producer = make_producer(settings.kafka)
    except KafkaError as exc:
        print(
            f"ragpulse produce: cannot reach Kafka at {settings.kafka.bootstrap_servers}: {exc}",
            file=sys.stderr,
        )
        return 1
    with tqdm(total=total, unit="msg", desc=f"-> {topic}", file=sys.stderr) as bar:
        try:
            sent = publish(
                producer,
                messages,
                topic=topic,
                rate=args.rate,
                on_sent=bar.update,
                should_stop=stop.is_set,
            )
        except KafkaError as exc:
            print(f"ragpulse produce: delivery failed: {exc}", file=sys.stderr)
            return 1
        finally:
            producer.close()
    print(f"published {sent} messages to {topic}", file=sys.stderr)
    return 0
