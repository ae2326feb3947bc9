"""Document keys for retrieval metrics: a context's id, else its url, urls normalized.

Ground truth and retrieved contexts often spell the same page differently
(`HTTPS://Wiki.example.com:443/Page/#intro` vs `https://wiki.example.com/Page`), so both
sides go through `normalize_key` before they are compared. Only the parts that never
change which resource is meant are normalized: scheme and host are lower-cased, the
default port (80 for http, 443 for https) is dropped, a trailing slash and the fragment
are removed. Path and query keep their case and order. Keys that are not urls (no
`://`) are used as given.
"""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import urlsplit, urlunsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}


@lru_cache(maxsize=1 << 16)
def normalize_url(url: str) -> str:
    """Canonical form of `url` (see the module docstring); unparsable urls are kept."""
    text = url.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return text
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    netloc = host
    if port is not None and _DEFAULT_PORTS.get(scheme) != port:
        netloc = f"{host}:{port}"
    if parts.username is not None or parts.password is not None:
        userinfo = parts.netloc.rpartition("@")[0]
        netloc = f"{userinfo}@{netloc}"
    path = parts.path.rstrip("/")
    normalized = urlunsplit((scheme, netloc, path, parts.query, ""))
    # Keep the invariant `normalize_key` relies on: url-like keys stay url-like.
    return normalized if "://" in normalized else text


def normalize_key(key: str) -> str:
    """The comparable form of a document key: urls normalized, other ids unchanged."""
    return normalize_url(key) if "://" in key else key
