"""Is any Kafka bootstrap server listening? Asked before a consumer starts, so that a wrong
address fails in seconds with one line instead of the client's half-minute of retries and
connection errors — and before anything else (a database) is created for nothing.

A TCP connection is the question: it proves something listens at the address (TLS and
SASL are the client's business afterwards, with their own clear errors).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Sequence

from collector.ingest.kafka.client import KafkaUnavailableError

DEFAULT_WAIT_S = 10.0
"""How long a start waits for Kafka unless told otherwise (`--wait-for-kafka`)."""


def split_address(server: str) -> tuple[str, int]:
    """`host:port` (IPv6 as `[::1]:9092`) -> (host, port); 9092 when no port is given."""
    host, sep, port = server.rpartition(":")
    if not sep or not port.isdigit() or (host.count(":") and not host.startswith("[")):
        return server.strip("[]"), 9092
    return host.strip("[]"), int(port)


def listening(server: str, timeout_s: float) -> bool:
    """Whether a TCP connection to `server` opens within `timeout_s`."""
    host, port = split_address(server)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def wait_for_kafka(
    servers: Sequence[str],
    wait_s: float = DEFAULT_WAIT_S,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """The first bootstrap server that listens, trying all of them until `wait_s` has
    passed; `KafkaUnavailableError` (one line, what to check) when none did."""
    deadline = clock() + wait_s
    while True:
        for server in servers:
            left = deadline - clock()
            if listening(server, max(0.2, min(2.0, left))):
                return server
        if clock() >= deadline:
            break
        sleep(min(1.0, max(0.0, deadline - clock())))
    raise KafkaUnavailableError(
        f"no Kafka broker listens at {', '.join(servers)} (waited {wait_s:g}s): check "
        "RAGPULSE_KAFKA__BOOTSTRAP_SERVERS, or pass --wait-for-kafka DURATION when Kafka "
        "starts together with ragpulse"
    )
