"""OTLP/HTTP in, Kafka out: the protocol side of `ragpulse receive` (no HTTP server here;
`exporters/http/receiver.py` serves it).

A request to `/v1/traces` or `/v1/logs` is read within the size limits (`body`: content
type, gzip decompressed with a bound), checked to parse as the signal's `Export*Service
Request` and nothing more (`signals`: its spans or log records counted, the first trace id
taken as the Kafka key), written to the signal's topic as it came, and answered only once
Kafka acknowledged it (`forward`). `handler` ties them together and answers as OTLP/HTTP
says (`responses`: the `Export*ServiceResponse` or a `google.rpc.Status`, in the request's
encoding); `errors` are the refusals with their HTTP status; `stats` the counters.
"""
