"""Evaluation results an application emits itself, ingested through the embedded broker:
OTLP log records (before and after their trace), span events and span attributes, merged
order-independently and replay-safe into `traces.evaluations`."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from prometheus_client import CollectorRegistry
from sqlalchemy import create_engine, text

from collector.ingest.decode.errors import DecodeError
from collector.ingest.decode.otlp_logs import decode_otlp_logs_message
from collector.ingest.kafka.broker import EmbeddedBroker
from collector.ingest.kafka.producer import OutgoingMessage, encode_record, make_producer, publish
from collector.settings import KafkaSettings, Settings, load_settings
from ragpulse.service import Service
from tests.collector.evaluation_messages import evaluated_spans, evaluation_logs, trace_hex
from tests.collector.otlp_traces import proto_message
from tests.collector.traces import make_trace
from tests.fixtures.broker import KafkaTopics

pytestmark = pytest.mark.timeout(120)


def _logs_topic(broker: EmbeddedBroker, topics: KafkaTopics) -> str:
    name = topics.otlp.replace("otlp_spans", "otlp_logs")
    broker.create_topics([name], partitions=3)
    return name


def _settings(db_url: str, topics: KafkaTopics, logs: str) -> Settings:
    kafka = topics.kafka_settings(topics=[*topics.all, logs], otlp_logs_topic=logs)
    return load_settings(database={"url": db_url}, kafka=kafka)


def _produce(topics: KafkaTopics, messages: Iterable[OutgoingMessage]) -> None:
    producer = make_producer(KafkaSettings(bootstrap_servers=[topics.bootstrap_servers]))
    try:
        publish(producer, messages, topic=topics.traces)
    finally:
        producer.close()


def _ingest(settings: Settings) -> dict[str, int]:
    service = Service(settings, registry=CollectorRegistry())
    service.run(idle_timeout_s=1.0)
    summary: dict[str, int] = service.stats.summary()
    return summary


def _evaluations(url: str) -> dict[str, tuple[Any, Any]]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT trace_id, evaluations, updated_at FROM traces"))
            out = {}
            for trace_id, evaluations, updated in rows:
                value = json.loads(evaluations) if isinstance(evaluations, str) else evaluations
                out[trace_id] = (value, updated)
            return out
    finally:
        engine.dispose()


GROUNDED = {"gen_ai.evaluation.name": "groundedness", "gen_ai.evaluation.score.value": 0.7}


@pytest.mark.slow
def test_logs_span_events_and_span_attributes_become_external_scores(
    db_url: str, kafka_broker: EmbeddedBroker, kafka_topics: KafkaTopics
) -> None:
    logs = _logs_topic(kafka_broker, kafka_topics)
    spans = evaluated_spans()
    otlp_id = trace_hex(spans)
    # the evaluator's log records come first: neither trace is stored yet
    early = evaluation_logs(
        [
            (int(otlp_id, 16), GROUNDED),
            ("order-42", {"gen_ai.evaluation.name": "Answer Quality", "error.type": "Timeout"}),
        ]
    )
    _produce(kafka_topics, [OutgoingMessage(early, logs, otlp_id.encode())])
    first = _ingest(_settings(db_url, kafka_topics, logs))
    assert first["stored"] == 1
    assert _evaluations(db_url) == {}  # kept aside, no stub trace
    trace = make_trace(0) | {"trace_id": "order-42"}
    _produce(
        kafka_topics,
        [
            OutgoingMessage(proto_message(spans), kafka_topics.otlp, otlp_id.encode()),
            OutgoingMessage(encode_record(trace), kafka_topics.traces, b"order-42"),
        ],
    )
    _ingest(_settings(db_url, kafka_topics, logs))
    stored = _evaluations(db_url)
    assert stored[otlp_id][0] == {
        "groundedness": {"score": 0.7, "label": None, "explanation": None, "error_type": None},
        "helpfulness": {
            "score": 0.9,
            "label": "helpful",
            "explanation": "answers the question",
            "error_type": None,
        },
        "toxicity": {"score": 0.02, "label": "clean", "explanation": None, "error_type": None},
    }
    assert stored["order-42"][0] == {
        "Answer Quality": {
            "score": None,
            "label": None,
            "explanation": None,
            "error_type": "Timeout",
        }
    }
    # a replay of everything changes nothing (not even updated_at); a later result wins
    later = evaluation_logs(
        [(int(otlp_id, 16), GROUNDED | {"gen_ai.evaluation.score.value": 0.4})],
        at_ns=1_764_000_100_000_000_000,
    )
    _produce(
        kafka_topics,
        [
            OutgoingMessage(early, logs, otlp_id.encode()),
            OutgoingMessage(proto_message(spans), kafka_topics.otlp, otlp_id.encode()),
        ],
    )
    again = _ingest(_settings(db_url, kafka_topics, logs))
    assert again["duplicates"] == 2 and again["stored"] == 0
    assert _evaluations(db_url) == stored
    _produce(kafka_topics, [OutgoingMessage(later, logs, otlp_id.encode())])
    _ingest(_settings(db_url, kafka_topics, logs))
    final = _evaluations(db_url)
    assert final[otlp_id][0]["groundedness"]["score"] == 0.4
    assert final[otlp_id][1] > stored[otlp_id][1]  # updated: the external job sees it


def _hex_ids_json(data: bytes) -> bytes:
    """OTLP/JSON as the Collector writes it: camelCase, hex trace/span ids."""
    request = ExportLogsServiceRequest()
    request.ParseFromString(data)
    obj = MessageToDict(request)
    for rl in obj["resourceLogs"]:
        for sl in rl["scopeLogs"]:
            for record in sl["logRecords"]:
                for key in ("traceId", "spanId"):
                    if key in record:
                        record[key] = base64.b64decode(record[key]).hex()
    return json.dumps(obj).encode()


def test_otlp_json_logs_decode_like_protobuf() -> None:
    data = evaluation_logs([(0x4BF92F3577B34DA6A3CE929D0E0E4736, GROUNDED)])
    proto = decode_otlp_logs_message(data)
    assert [e.trace_id for e in proto] == ["4bf92f3577b34da6a3ce929d0e0e4736"]
    assert decode_otlp_logs_message(_hex_ids_json(data), "otlp_json") == proto
    assert proto[0].event_hash == decode_otlp_logs_message(data)[0].event_hash


def test_an_evaluator_span_is_not_an_llm_call() -> None:
    from collector.ingest.decode.otlp import decode_otlp_message
    from collector.ingest.decode.otlp_mapping import record_from_spans

    (fragment,) = decode_otlp_message(proto_message(evaluated_spans()))
    kinds = {s["name"]: s["kind"] for s in fragment.spans.values()}
    assert kinds == {"rag": "CHAIN", "evaluate toxicity": ""}
    record = record_from_spans(fragment.trace_id, fragment.spans)
    assert record.latency_stages is None  # its duration is no `generation` stage
    assert record.answer == "Apply on the portal."


def test_untrusted_values_are_bounded_and_bad_messages_refused() -> None:
    odd = {
        "gen_ai.evaluation.name": "x" * 500,
        "gen_ai.evaluation.score.value": float("nan"),
        "gen_ai.evaluation.explanation": "y" * 10_000,
    }
    (event,) = decode_otlp_logs_message(
        evaluation_logs([(1, odd), (2, {"gen_ai.evaluation.score.value": 1.0})])
    )  # the record without a name is no evaluation
    assert len(event.evaluation["name"]) == 128
    assert event.evaluation["score"] is None  # NaN is not a score
    assert len(event.evaluation["explanation"]) == 2000
    with pytest.raises(DecodeError) as info:
        decode_otlp_logs_message(b"\x0a\xff\xff\xff")
    assert info.value.reason == "invalid_otlp"
