"""HTTP basic auth for the endpoints (`/metrics`, the OTLP receiver): the credentials
compared in constant time, the 401 answer, and the paths left open for the probes."""

from __future__ import annotations

import base64
import binascii
import hmac

OPEN_PATHS = frozenset({"/healthz", "/readyz"})
"""Paths served without credentials even when basic auth is configured: the liveness and
readiness probes (Kubernetes sends no credentials; they reveal no series or secrets)."""

UNAUTHORIZED_HEADERS = [
    ("WWW-Authenticate", 'Basic realm="ragpulse", charset="UTF-8"'),
    ("Content-Type", "text/plain"),
]


def expected_credentials(basic_auth: tuple[str, str] | None) -> bytes | None:
    """`user:password` as the bytes a matching `Authorization` header carries."""
    return None if basic_auth is None else f"{basic_auth[0]}:{basic_auth[1]}".encode()


def credentials_match(header: str, expected: bytes) -> bool:
    """An `Authorization` header against `user:password` (UTF-8). The scheme is matched
    case-insensitively (RFC 7617: `basic`, `BASIC`), the credentials in constant time."""
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        given = base64.b64decode(token.strip(), validate=True)
    except (binascii.Error, ValueError):
        return False
    return hmac.compare_digest(given, expected)


def refused(path: str, header: str, expected: bytes | None) -> bool:
    """Whether a request for `path` lacks the credentials it needs."""
    if expected is None or path in OPEN_PATHS:
        return False
    return not credentials_match(header, expected)
