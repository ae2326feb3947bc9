"""`ragpulse receive`: the OTLP/HTTP receiver, until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import signal
import threading
from types import FrameType
from typing import Any

from collector.settings import Settings, load_settings

DESCRIPTION = (
    "Accept OTLP/HTTP exports (POST /v1/traces and /v1/logs, protobuf or JSON, optionally "
    "gzip) from applications without an OpenTelemetry Collector and write each request, "
    "as it came, to the Kafka topic the consumer reads (kafka.otlp_topic, "
    "kafka.otlp_logs_topic). A request is answered 200 only after Kafka acknowledged it "
    "(acks=all); 503 with Retry-After while Kafka is unreachable or slow, 413 past "
    "receiver.max_body_bytes, 415 for other content types, 400 for a body that is not an "
    "OTLP export request. Listens on RAGPULSE_RECEIVER__HOST:PORT (127.0.0.1:4318), with "
    "the TLS and basic-auth settings of /metrics under RAGPULSE_RECEIVER__; serves its "
    "counters on /metrics and /healthz, /readyz on the same port. No database is used. "
    "SIGTERM or Ctrl-C: stop accepting, finish the requests in flight, exit 0."
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "receive",
        help="OTLP/HTTP receiver: /v1/traces and /v1/logs into Kafka (no Collector needed)",
        description=DESCRIPTION,
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return receive(load_settings(args.config))


def receive(settings: Settings) -> int:
    """Run the receiver until SIGTERM/SIGINT (also `ragpulse run --role receiver`)."""
    from collector.ingest.kafka import quiet_client_logs

    quiet_client_logs()
    from prometheus_client import CollectorRegistry

    from ragpulse.receiver import Receiver

    stop = threading.Event()

    def handler(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    receiver = Receiver(settings, CollectorRegistry()).start()
    kafka = settings.kafka
    print(
        f"receiving OTLP/HTTP on {receiver.url}: /v1/traces -> {kafka.otlp_topic}, "
        f"/v1/logs -> {kafka.otlp_logs_topic} (Kafka {','.join(kafka.bootstrap_servers)})",
        flush=True,
    )
    try:
        stop.wait()
    finally:
        receiver.stop()
    print("receiver stopped", flush=True)
    return 0
