"""kafka-python's polled records as the pipeline's `RawMessage`s, and the offsets of a batch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from collector.ingest.pipeline import RawMessage


def to_raw_messages(records: Mapping[Any, Sequence[Any]]) -> list[RawMessage]:
    """kafka-python's `{TopicPartition: [ConsumerRecord]}` as `RawMessage`s, in offset order."""
    messages: list[RawMessage] = []
    for tp, batch in records.items():
        for record in batch:
            messages.append(
                RawMessage(
                    topic=tp.topic,
                    partition=tp.partition,
                    offset=record.offset,
                    key=record.key,
                    value=record.value,
                    timestamp_ms=record.timestamp,
                )
            )
    return messages


def next_offsets(records: Mapping[Any, Sequence[Any]]) -> dict[Any, int]:
    """Per partition, the offset to commit after this batch: last offset + 1."""
    return {tp: batch[-1].offset + 1 for tp, batch in records.items() if batch}


def first_offsets(records: Mapping[Any, Sequence[Any]]) -> dict[Any, int]:
    return {tp: batch[0].offset for tp, batch in records.items() if batch}
