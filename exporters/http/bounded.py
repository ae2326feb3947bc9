"""A `wsgiref` server hardened against clients that connect and stall.

One thread per connection but at most `max_connections` of them; a connection beyond
that cuts the oldest one being served (real requests take milliseconds, so the oldest
is the likeliest to be idle) and is refused only when no slot frees within half a
second; the TLS handshake runs on the connection's own thread (never in `accept()`,
where one silent client would freeze every endpoint), and every connection has a
deadline of `request_timeout_s` from accept to response, handshake included, after
which it is cut.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

logger = logging.getLogger(__name__)

_EVICTION_WAIT_S = 0.5
"""How long the serving thread waits for an evicted connection's slot before refusing."""

_REFUSED = (
    b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
    b"Connection: close\r\nRetry-After: 1\r\n\r\ntoo many connections\n"
)


@dataclass
class _Connection:
    """A connection being served: its socket (the TLS one once wrapped) and deadline."""

    sock: socket.socket
    deadline: float
    cut: str | None = None
    """Why the server cut it: "deadline" or "evicted" (for a newer connection)."""


class BoundedWSGIServer(WSGIServer):
    """A `WSGIServer` that serves each connection on its own daemon thread, at most
    `max_connections` at once, each within `request_timeout_s` (see the module docstring).

    The serving thread only accepts, counts and hands over; it also cuts connections past
    their deadline (`service_actions`, run every poll interval), so a client that trickles
    one byte at a time cannot outlive the deadline either."""

    request_queue_size = 128  # the listen backlog: a burst waits for accept(), not SYN retries

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[WSGIRequestHandler],
        *,
        max_connections: int,
        request_timeout_s: float,
        tls: ssl.SSLContext | None,
    ) -> None:
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        if request_timeout_s <= 0:
            raise ValueError("request_timeout_s must be positive")
        super().__init__(address, handler)
        self.max_connections = max_connections
        self.request_timeout_s = request_timeout_s
        self.tls = tls
        self.refused = 0
        self.timed_out = 0
        self.evicted = 0
        self._slots = threading.BoundedSemaphore(max_connections)
        self._lock = threading.Lock()
        self._live: dict[int, _Connection] = {}
        self._next_id = 0

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self._evict_oldest()
            if not self._slots.acquire(timeout=_EVICTION_WAIT_S):
                self.refused += 1
                self._refuse(request)
                return
        with self._lock:
            key = self._next_id
            self._next_id += 1
            self._live[key] = _Connection(request, time.monotonic() + self.request_timeout_s)
        try:
            threading.Thread(
                target=self._serve_connection,
                args=(key, request, client_address),
                name="ragpulse-http-conn",
                daemon=True,
            ).start()
        except RuntimeError:  # cannot start a thread (interpreter exiting, limits)
            self._forget(key)
            self.shutdown_request(request)
            self._slots.release()

    def _refuse(self, request: socket.socket) -> None:
        """Answer 503 without blocking (plain HTTP; a TLS client just sees the close)."""
        if self.tls is None:
            with contextlib.suppress(OSError):
                request.setblocking(False)
                request.send(_REFUSED)
        self.shutdown_request(request)

    def _serve_connection(self, key: int, request: socket.socket, client_address: Any) -> None:
        conn: socket.socket = request
        timed_out = False
        try:
            conn.settimeout(self.request_timeout_s)
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
                with self._lock:
                    self._live[key].sock = conn
                conn.do_handshake()
            self.finish_request(conn, client_address)
        except TimeoutError:
            timed_out = True
        except (OSError, ValueError) as exc:
            # Resets, failed handshakes, cut connections: the client's problem.
            logger.debug("http connection from %s ended: %r", client_address, exc)
        except Exception:
            logger.exception("http connection from %s failed", client_address)
        finally:
            state = self._forget(key)
            with self._lock:
                if state is not None and state.cut == "evicted":
                    self.evicted += 1
                elif timed_out or (state is not None and state.cut):
                    self.timed_out += 1
            self.shutdown_request(conn)
            self._slots.release()

    def _forget(self, key: int) -> _Connection | None:
        with self._lock:
            return self._live.pop(key, None)

    def service_actions(self) -> None:
        now = time.monotonic()
        with self._lock:
            for state in self._live.values():
                if not state.cut and state.deadline <= now:
                    self._cut(state.sock)
                    state.cut = "deadline"

    def _evict_oldest(self) -> None:
        with self._lock:
            candidates = [state for state in self._live.values() if not state.cut]
            if candidates:
                oldest = min(candidates, key=lambda state: state.deadline)
                self._cut(oldest.sock)
                oldest.cut = "evicted"

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until no connection is being served (at most `timeout_s`); whether none is."""
        deadline = time.monotonic() + timeout_s
        while self.connections and time.monotonic() < deadline:
            time.sleep(0.02)
        return not self.connections

    def cut_all(self) -> None:
        with self._lock:
            for state in self._live.values():
                self._cut(state.sock)

    @staticmethod
    def _cut(conn: socket.socket) -> None:
        # The plain socket's shutdown, also on an SSLSocket (whose own shutdown would
        # unset its TLS state under the thread that is using it): the blocked read or
        # write returns and that thread ends. Held under the lock, so the descriptor
        # cannot have been closed and reused meanwhile.
        with contextlib.suppress(OSError):
            socket.socket.shutdown(conn, socket.SHUT_RDWR)

    @property
    def connections(self) -> int:
        with self._lock:
            return len(self._live)
