"""The Kafka consumer client ragpulse ingests with, configured from `KafkaSettings`."""

from __future__ import annotations

from typing import Any

from collector.ingest.kafka.producer import kafka_security_options
from collector.settings import KafkaSettings


class KafkaUnavailableError(RuntimeError):
    """The consumer could not connect to the Kafka cluster at start."""


def make_kafka_consumer(kafka: KafkaSettings, **overrides: Any) -> Any:
    """A `KafkaConsumer` in the configured group, subscribed to the configured topics.

    No committed offset -> earliest (nothing published before the first start is missed);
    offsets are committed by hand only after the database transaction committed.
    """
    from kafka import KafkaConsumer

    options = kafka_security_options(kafka)
    options.update(
        {
            "group_id": kafka.group_id,
            "auto_offset_reset": "earliest",
            "enable_auto_commit": False,
            "max_poll_records": kafka.max_poll_records,
            "max_poll_interval_ms": kafka.max_poll_interval_ms,
            "session_timeout_ms": kafka.session_timeout_ms,
            "heartbeat_interval_ms": max(100, min(3000, kafka.session_timeout_ms // 3)),
            "enable_incremental_fetch_sessions": False,
            "max_partition_fetch_bytes": kafka.max_partition_fetch_bytes,
            "fetch_max_bytes": max(kafka.fetch_max_bytes, kafka.max_partition_fetch_bytes),
            "receive_message_max_bytes": max(kafka.fetch_max_bytes, kafka.max_partition_fetch_bytes)
            + 1024 * 1024,
        }
    )
    options.update(overrides)
    consumer = KafkaConsumer(**options)
    consumer.subscribe(topics=list(kafka.topics))
    return consumer
