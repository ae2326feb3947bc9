"""Reading a request body within bounds: the content type, the size before and after gzip.

A body is never held beyond `limit` bytes: a `Content-Length` above it is refused before
reading, and gzip is inflated chunk by chunk with `max_length`, so a small bomb that
inflates to gigabytes costs at most `limit` + one chunk of memory.
"""

from __future__ import annotations

import zlib
from typing import BinaryIO, Literal

from collector.ingest.otlp_http.errors import (
    BadRequestError,
    LengthRequiredError,
    TooLargeError,
    UnsupportedMediaError,
)

Encoding = Literal["protobuf", "json"]

MEDIA_TYPES: dict[str, Encoding] = {
    "application/x-protobuf": "protobuf",
    "application/protobuf": "protobuf",
    "application/json": "json",
}
CONTENT_TYPES: dict[Encoding, str] = {
    "protobuf": "application/x-protobuf",
    "json": "application/json",
}
_CHUNK = 64 * 1024
_DRAIN_MAX = 16 * 1024 * 1024
"""Most bytes of a refused body read and thrown away, so the client sees the answer."""


def answer_encoding(content_type: str) -> Encoding:
    """The encoding to answer in: the request's, JSON when it has none we know."""
    return MEDIA_TYPES.get(_media(content_type), "json")


def _media(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def encoding_of(content_type: str) -> Encoding:
    """The encoding a `Content-Type` names (parameters such as charset ignored), else
    `UnsupportedMediaError`."""
    media = _media(content_type)
    try:
        return MEDIA_TYPES[media]
    except KeyError:
        raise UnsupportedMediaError(
            f"Content-Type {media or '(none)'!r} is not supported: send "
            "application/x-protobuf or application/json"
        ) from None


def read_body(
    stream: BinaryIO, content_length: str | None, content_encoding: str, limit: int
) -> bytes:
    """The request body, gunzipped when `content_encoding` says gzip; at most `limit` bytes
    read and at most `limit` bytes produced, else `TooLargeError`."""
    length = _length(content_length)
    coding = content_encoding.strip().lower()
    if coding not in ("", "identity", "gzip", "x-gzip"):
        drain(stream, length)
        raise UnsupportedMediaError(
            f"Content-Encoding {coding!r} is not supported: send gzip or none"
        )
    if length > limit:
        drain(stream, length)
        raise TooLargeError(f"the body is {length} bytes, the limit is {limit}")
    raw = _read_exactly(stream, length)
    return _gunzip(raw, limit) if coding in ("gzip", "x-gzip") else raw


def _length(content_length: str | None) -> int:
    if not content_length:
        raise LengthRequiredError("Content-Length is required (chunked bodies are not accepted)")
    try:
        length = int(content_length)
    except ValueError:
        raise BadRequestError(f"Content-Length {content_length!r} is not a number") from None
    if length < 0:
        raise BadRequestError(f"Content-Length {length} is negative")
    return length


def _read_exactly(stream: BinaryIO, length: int) -> bytes:
    parts = []
    left = length
    while left:
        chunk = stream.read(min(left, _CHUNK))
        if not chunk:
            raise BadRequestError(f"the body ended after {length - left} of {length} bytes")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _gunzip(raw: bytes, limit: int) -> bytes:
    """Inflate gzip members (one or more, concatenated) into at most `limit` bytes."""
    out: list[bytes] = []
    size = 0
    data = raw
    while data:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        pending = data
        while pending and not inflater.eof:
            try:
                piece = inflater.decompress(pending, limit - size + 1)
            except zlib.error as exc:
                raise BadRequestError(f"the body is not valid gzip: {exc}") from None
            size += len(piece)
            if size > limit:
                raise TooLargeError(f"the body inflates past the limit of {limit} bytes")
            out.append(piece)
            pending = inflater.unconsumed_tail
        if not inflater.eof:
            raise BadRequestError("the body is not valid gzip: it ends inside a member")
        data = inflater.unused_data
    return b"".join(out)


def drain(stream: BinaryIO, length: int) -> None:
    """Read and drop up to `length` bytes (at most 16 MiB) of a body that is refused
    unread: a client still sending when the connection closes may miss the answer."""
    left = min(length, _DRAIN_MAX)
    while left > 0:
        chunk = stream.read(min(left, _CHUNK))
        if not chunk:
            return
        left -= len(chunk)
