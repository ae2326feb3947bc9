"""The last N messages of every partition of a topic, read without a consumer group.

For looking at what arrives (`ragpulse inspect --last N`) while the service consumes the
same topic: the partitions are assigned by hand (`assign`/`seek`), no group is joined and
no offset is committed, so the service's group, its assignment and its lag are untouched.
A cluster that cannot be reached fails within the timeout, not the client's 30 s default.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from collector.errors import UserError
from collector.ingest.kafka.client import KafkaUnavailableError
from collector.ingest.kafka.producer import kafka_security_options
from collector.ingest.kafka.records import to_raw_messages
from collector.ingest.pipeline import RawMessage
from collector.settings import KafkaSettings


def last_messages(
    kafka: KafkaSettings,
    topic: str,
    count: int,
    timeout_s: float = 10.0,
    before: Mapping[int, int] | None = None,
) -> list[RawMessage]:
    """Up to `count` newest messages of each partition of `topic`, by (partition, offset);
    with `before` (partition -> offset), the `count` messages before that offset of each
    partition named instead (the older window under messages already read).

    `KafkaUnavailableError` when the cluster cannot be reached within `timeout_s`,
    `UserError` when the topic does not exist. Messages not fetched within `timeout_s`
    are left out (the result is then shorter)."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import KafkaError

    if count < 1:
        raise UserError(f"--last wants at least 1 message, got {count}")
    timeout_ms = max(1, int(timeout_s * 1000))
    options = kafka_security_options(kafka)
    options.update(
        {
            "group_id": None,
            "enable_auto_commit": False,
            "bootstrap_timeout_ms": timeout_ms,
            "request_timeout_ms": max(timeout_ms, 1000),
            "max_partition_fetch_bytes": kafka.max_partition_fetch_bytes,
            "fetch_max_bytes": max(kafka.fetch_max_bytes, kafka.max_partition_fetch_bytes),
            "receive_message_max_bytes": max(kafka.fetch_max_bytes, kafka.max_partition_fetch_bytes)
            + 1024 * 1024,
        }
    )
    servers = ",".join(kafka.bootstrap_servers)
    try:
        consumer = KafkaConsumer(**options)
    except KafkaError as exc:
        raise KafkaUnavailableError(f"cannot reach Kafka at {servers}: {exc}") from exc
    try:
        partitions = consumer.partitions_for_topic(topic)
        if not partitions:
            known = ", ".join(sorted(t for t in consumer.topics() if not t.startswith("__")))
            raise UserError(f"no topic {topic!r} on Kafka at {servers} (topics: {known or 'none'})")
        assigned = [TopicPartition(topic, p) for p in sorted(partitions)]
        consumer.assign(assigned)
        try:
            ends = consumer.end_offsets(assigned, timeout_ms=timeout_ms)
            starts = consumer.beginning_offsets(assigned, timeout_ms=timeout_ms)
        except KafkaError as exc:
            raise KafkaUnavailableError(
                f"cannot read offsets of {topic!r} at {servers}: {exc}"
            ) from exc
        if before is not None:
            assigned = [tp for tp in assigned if tp.partition in before]
            if not assigned:
                return []
            consumer.assign(assigned)
            ends = {tp: before[tp.partition] for tp in assigned}
        for tp in assigned:
            consumer.seek(tp, max(starts[tp], ends[tp] - count))
        return _read(consumer, ends, count, timeout_s, fixed=before is not None)
    finally:
        consumer.close(autocommit=False)


def _read(
    consumer: Any, estimated: dict[Any, int], count: int, timeout_s: float, *, fixed: bool
) -> list[Any]:
    """Poll until each partition's position reached its end, then keep its last `count`.

    A `fixed` end is the one given (`before`). Otherwise the end is the high watermark of
    the partition's first fetch response: `end_offsets`
    is only an estimate, low on the embedded broker (it answers with the last batch's
    base offset + 1, as the consumer's lag notes), so the seek above may start early and
    the surplus is dropped here. Messages written after that fetch are left out."""
    deadline = time.monotonic() + timeout_s
    ends: dict[Any, int] = {}
    fetched: dict[Any, list[Any]] = {}
    pending = {tp for tp, end in estimated.items() if consumer.position(tp) < end}
    while pending and time.monotonic() < deadline:
        for tp, batch in consumer.poll(timeout_ms=200).items():
            fetched.setdefault(tp, []).extend(batch)
        for tp in list(pending):
            high = consumer.highwater(tp)
            if fixed:
                ends[tp] = estimated[tp]
            elif tp not in ends and high is not None:
                ends[tp] = max(int(high), estimated[tp])
            if tp in ends and consumer.position(tp) >= ends[tp]:
                pending.discard(tp)
    kept = {}
    for tp, batch in fetched.items():
        end = ends.get(tp, estimated[tp])
        kept[tp] = [r for r in batch if end - count <= r.offset < end]
    return sorted(to_raw_messages(kept), key=lambda m: (m.partition, m.offset))
