"""Why a request is refused, each with the HTTP status OTLP/HTTP prescribes for it.

Only `KafkaUnavailableError` is retriable (503 with `Retry-After`: the OTLP exporters
retry it with backoff); the others are the client's problem and retrying them is useless.
"""

from __future__ import annotations


class RequestRefused(Exception):
    """A request that is answered with `status` and a one-line reason (the message)."""

    status = 400
    retriable = False


class BadRequestError(RequestRefused):
    """The body is not a request of the signal (or not valid gzip)."""


class LengthRequiredError(RequestRefused):
    """No `Content-Length` (a chunked body): its size cannot be bounded before reading."""

    status = 411


class TooLargeError(RequestRefused):
    """The body, compressed or decompressed, is larger than `receiver.max_body_bytes`."""

    status = 413


class UnsupportedMediaError(RequestRefused):
    """A content type other than protobuf or JSON, or an encoding other than gzip."""

    status = 415


class KafkaUnavailableError(RequestRefused):
    """Kafka could not be reached or did not acknowledge the message in time."""

    status = 503
    retriable = True
