"""Ingest: Kafka messages -> decoded, validated records -> stored and sampled traces.

`kafka/` consumes (and, for sample traffic, produces), `decode/` turns message values into
records, `pipeline` stores one batch in one transaction and `sampling` decides on the
trace-id hash which stored traces the jobs evaluate.
"""
