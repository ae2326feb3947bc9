"""Round trip: ragpulse scores traces -> its evaluation events go over OTLP/HTTP to a real
receiver -> the receiver puts each request's bytes on the Kafka OTLP logs topic (as an
OpenTelemetry Collector with a Kafka exporter would) -> ragpulse ingests them as external
scores -> the `external` job publishes `external:<metric>` with the values ragpulse made."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import select

from collector.ingest.kafka.broker import EmbeddedBroker
from collector.ingest.kafka.producer import OutgoingMessage, encode_record, make_producer, publish
from collector.jobs.catalog.external import ExternalJob
from collector.jobs.catalog.external import definition as external_definition
from collector.jobs.run.definition import JobEnvironment
from collector.jobs.run.engine import IncrementalJob
from collector.jobs.scheduler import definitions
from collector.jobs.windows.window import parse_windows
from collector.settings import KafkaSettings, Settings, load_settings
from collector.store.models import JobOutcome, Trace
from collector.store.session import make_engine, make_session_factory
from exporters.evaluation_events import make_evaluation_events
from exporters.prometheus import QualityCollector
from exporters.quality import ResultsCache
from ragpulse.service import Service
from tests.collector.otlp_traces import proto_message, rag_spans, trace_hex
from tests.collector.traces import make_trace
from tests.fixtures.broker import KafkaTopics
from tests.fixtures.otlp_receiver import OtlpReceiver

pytestmark = pytest.mark.timeout(180)


def _settings(url: str, topics: KafkaTopics, logs: str) -> Settings:
    kafka = topics.kafka_settings(topics=[*topics.all, logs], otlp_logs_topic=logs)
    return load_settings(
        database={"url": url},
        kafka=kafka,
        sampling={"real_users_benchmark": 1.0},
        evaluation_events={"enabled": True, "batch_size": 4},
    )


def _ingest(settings: Settings) -> None:
    Service(settings, registry=CollectorRegistry()).run(idle_timeout_s=1.0)


@pytest.mark.slow
def test_ragpulse_scores_come_back_as_external_series(
    sqlite_url: str,
    kafka_broker: EmbeddedBroker,
    kafka_topics: KafkaTopics,
    otlp_receiver: OtlpReceiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    logs = kafka_topics.otlp.replace("otlp_spans", "otlp_logs")
    kafka_broker.create_topics([logs], partitions=3)
    settings = _settings(sqlite_url, kafka_topics, logs)
    producer = make_producer(KafkaSettings(bootstrap_servers=[kafka_topics.bootstrap_servers]))
    lock = threading.Lock()

    def forward(raw: bytes) -> None:
        with lock:
            publish(producer, [OutgoingMessage(raw, logs)], topic=logs)

    otlp_receiver.forward = forward
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp_receiver.endpoint)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", raising=False)

    # one OTLP trace (W3C id) and one JSON trace with a free-form id, both with ground truth
    spans = rag_spans(root_attributes={"ragpulse.shown_url": "https://kb.example.org/doc-2"})
    otlp_id = trace_hex(spans)
    now = datetime.now(UTC)
    trace = make_trace(3) | {"trace_id": "order-42", "timestamp": now.isoformat()}
    try:
        publish(
            producer,
            [
                OutgoingMessage(proto_message(spans), kafka_topics.otlp, otlp_id.encode()),
                OutgoingMessage(encode_record(trace), kafka_topics.traces, b"order-42"),
            ],
            topic=kafka_topics.traces,
        )
        _ingest(settings)

        engine = make_engine(sqlite_url)
        factory = make_session_factory(engine)
        events = make_evaluation_events(settings, factory)
        assert events is not None
        cache = ResultsCache()
        env = JobEnvironment(
            session_factory=factory,
            windows=parse_windows(settings.scheduler.windows),
            group_labels=settings.scheduler.group_labels,
            results=cache,
            observers=(events,),
        )
        job = IncrementalJob(definitions(settings)["real_users_benchmark"], env)
        report = job.run(now + timedelta(seconds=1))
        job.publish()
        assert report.new_traces == 2
        assert events.flush(10)
        events.shutdown()
        assert events.counts.sent > 0 and not any(events.counts.dropped.values())
        assert len(otlp_receiver.received) >= 2  # batches of 4 events

        _ingest(settings)  # the forwarded log requests
        external = ExternalJob(external_definition(settings), env)
        external.run(now + timedelta(seconds=2))
        external.publish()
    finally:
        producer.close()

    with factory() as session:
        made = {
            (row.trace_id, metric): value
            for row in session.scalars(select(JobOutcome).where(JobOutcome.job != "external"))
            for metric, value in row.outcomes.items()
            if isinstance(value, float)
        }
        stored = {  # the external job's own outcomes, stored under the cleaned names
            (row.trace_id, metric.removeprefix("external:")): value
            for row in session.scalars(select(JobOutcome).where(JobOutcome.job == "external"))
            for metric, value in row.outcomes.items()
        }
        back = {
            (t.trace_id, name): result["score"]
            for t in session.scalars(select(Trace))
            for name, result in (t.evaluations or {}).items()
        }
    engine.dispose()
    assert made and back == made  # every score ragpulse made came back, on its own trace
    assert stored == back
    assert {t for t, _ in back} == {otlp_id, "order-42"}

    body = QualityCollector(cache, ["tenant"]).render().decode()
    ours = _values(body, "mrr")
    theirs = _values(body, "external:mrr")
    assert ours and theirs == ours  # same windows and groups, same values


def _values(body: str, metric: str) -> dict[str, str]:
    """label set (without metric) -> value of `ragpulse_metric_value` for `metric`."""
    out = {}
    for line in body.splitlines():
        if line.startswith("ragpulse_metric_value{") and f'metric="{metric}"' in line:
            labels, value = line.rsplit(" ", 1)
            key = labels.replace(f'metric="{metric}",', "").replace(f'metric="{metric}"', "")
            out[key] = value
    return out
