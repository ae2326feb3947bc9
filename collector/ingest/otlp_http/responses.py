"""OTLP/HTTP answers, in the encoding of the request (protobuf or JSON).

Success is the signal's empty `Export*ServiceResponse` (no partial success: a request is
written whole or not at all); a refusal is a `google.rpc.Status` whose message is the
one-line reason, with the gRPC code matching the HTTP status.
"""

from __future__ import annotations

from google.protobuf import json_format
from google.rpc.status_pb2 import Status

from collector.ingest.otlp_http.body import CONTENT_TYPES, Encoding
from collector.ingest.otlp_http.signals import Signal

_GRPC_CODES = {
    400: 3,  # INVALID_ARGUMENT
    401: 16,  # UNAUTHENTICATED
    404: 5,  # NOT_FOUND
    405: 12,  # UNIMPLEMENTED
    411: 3,
    413: 8,  # RESOURCE_EXHAUSTED
    415: 3,
    503: 14,  # UNAVAILABLE
}


def success(signal: Signal, encoding: Encoding) -> tuple[str, bytes]:
    """(Content-Type, body) of a 200: the signal's empty `Export*ServiceResponse`."""
    response = signal.response()
    if encoding == "json":
        return CONTENT_TYPES["json"], json_format.MessageToJson(response, indent=None).encode()
    return CONTENT_TYPES["protobuf"], response.SerializeToString()


def status(http_status: int, message: str, encoding: Encoding) -> tuple[str, bytes]:
    """(Content-Type, body) of a refusal: a `google.rpc.Status` with the reason."""
    body = Status(code=_GRPC_CODES.get(http_status, 2), message=message)  # 2: UNKNOWN
    if encoding == "json":
        return CONTENT_TYPES["json"], json_format.MessageToJson(body, indent=None).encode()
    return CONTENT_TYPES["protobuf"], body.SerializeToString()
