"""`ragpulse inspect`: captured OTLP messages made by the real OpenTelemetry SDK (files:
protobuf, OTLP/JSON, gzipped JSON lines, stdin; or the last N messages of each partition
of a topic on the real embedded broker) print the trace ragpulse would store, and that is
the trace the ingest does store; the conventions, the missing fields and the attributes
used and left unread per span; errors are one line each."""

from __future__ import annotations

import gzip
import io
import json
import socket
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from collector.ingest.kafka.producer import make_producer
from collector.settings import KafkaSettings
from ragpulse.cli import main
from ragpulse.inspect_render import collapse
from tests.collector.otlp_traces import (
    ANSWER,
    QUESTION,
    genai_llm_span,
    json_message,
    proto_message,
    rag_spans,
    trace_hex,
)
from tests.fixtures.broker import KafkaTopics
from tests.instrumentation.harness import ingest, stored_traces

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in [k for k in __import__("os").environ if k.startswith("RAGPULSE_")]:
        monkeypatch.delenv(key)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["inspect", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _json(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


def test_a_protobuf_capture_prints_the_trace_and_how_each_span_was_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spans = rag_spans(root_attributes={"http.route": "/ask"})
    path = tmp_path / "captured.pb"
    path.write_bytes(proto_message(spans))
    code, out, err = _run(capsys, str(path))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith(f"trace {trace_hex(spans)}  (3 spans from 1 message: ")
    assert "  conventions: openinference   missing: nothing" in lines
    assert f"  question: {QUESTION}" in lines and f"  answer:   {ANSWER}" in lines
    assert "    [1] id=doc-1 score=0.92 url=https://kb.example.org/doc-1" in lines
    assert "  session: session-7   user: user-3   model: gpt-4o-mini" in lines
    assert "  usage: prompt_tokens=900 completion_tokens=120 total_tokens=1020" in lines
    assert "  tags: service=rag-app tenant=acme" in lines
    assert any(line.startswith("  latency: ") and "retrieval" in line for line in lines)
    # the root, then its children indented, each with its conventions and attributes
    root = lines.index("    rag  CHAIN  [ragpulse, openinference]  scope tests.otlp")
    assert lines[root + 2] == "      unread: http.route"
    assert "input.value" in lines[root + 1] and "ragpulse.tag.tenant" in lines[root + 1]
    assert "      retrieve  RETRIEVER  [openinference]  scope tests.otlp" in lines
    assert "      generate  LLM  [openinference, genai]  scope tests.otlp" in lines
    assert "retrieval.documents.*.document.id (×3)" in out


def test_json_output_is_what_the_ingest_stores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    spans = rag_spans()
    path = tmp_path / "captured.json"
    path.write_bytes(json_message(spans))
    code, out, _ = _run(capsys, "--json", str(path))
    (shown,) = _json(out)
    assert code == 0 and shown["trace_id"] == trace_hex(spans)
    assert shown["root_span_seen"] is True
    assert (shown["conventions"], shown["missing"]) == (["openinference"], [])
    ingest(sqlite_url, [path.read_bytes()])
    stored = stored_traces(sqlite_url)[trace_hex(spans)]
    record = shown["record"]
    assert record["question"] == stored.question and record["answer"] == stored.answer
    assert record["contexts"] == stored.contexts
    for key in ("session_id", "user_id", "model", "usage", "latency_ms", "tags"):
        assert record[key] == getattr(stored, key), key
    assert record["metadata"] == stored.meta
    assert record["latency_stages"] == stored.latency_stages
    by_name = {s["name"]: s for s in shown["spans"]}
    assert by_name["generate"]["conventions"] == ["openinference", "genai"]
    assert "llm.model_name" in by_name["generate"]["used"]
    assert by_name["generate"]["unread"] == []
    assert by_name["retrieve"]["parent"] == by_name["rag"]["span_id"]


def test_gzipped_json_lines_and_stdin_merge_a_split_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, *children = rag_spans()
    path = tmp_path / "captured.jsonl.gz"
    path.write_bytes(gzip.compress(json_message(children) + b"\n" + json_message([root]) + b"\n"))
    code, out, _ = _run(capsys, "--json", str(path))
    (shown,) = _json(out)
    assert code == 0 and shown["sources"] == [f"{path}#1", f"{path}#2"]
    assert shown["root_span_seen"] and len(shown["spans"]) == 3
    # the children alone, from stdin: a partial trace, said so (its LLM span has the
    # question and the answer)
    stdin = io.TextIOWrapper(io.BytesIO(proto_message(children)))
    monkeypatch.setattr(sys, "stdin", stdin)
    code, out, _ = _run(capsys, "-")
    assert code == 0 and "root span: not among these messages" in out
    assert "  conventions: openinference   missing: nothing" in out


def test_missing_fields_and_no_convention(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("plain").start_as_current_span(
        "GET /health", attributes={"http.method": "GET"}
    ):
        pass
    plain = tmp_path / "plain.pb"
    plain.write_bytes(proto_message(exporter.get_finished_spans()))
    genai = tmp_path / "genai.pb"
    genai.write_bytes(proto_message(genai_llm_span()))
    code, out, _ = _run(capsys, "--json", str(plain), str(genai))
    shown = {t["conventions"][0]: t for t in _json(out)}
    assert code == 0 and set(shown) == {"none", "genai"}
    assert shown["none"]["missing"] == ["question", "answer", "contexts"]
    assert shown["none"]["spans"][0]["unread"] == ["http.method"]
    assert shown["genai"]["record"]["model"] == "gpt-4o-2024-08-06"
    assert shown["genai"]["missing"] == ["question", "answer", "contexts"]


def test_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, str(tmp_path / "nope.pb"))
    assert code == 2 and err == f"ragpulse: no such file: {tmp_path / 'nope.pb'}\n"
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x0a\xff\xff\xff\xff\xff")
    code, _, err = _run(capsys, str(junk))
    assert code == 2 and f"ragpulse: {junk} is not an OTLP trace message (invalid_otlp: " in err
    logs = tmp_path / "other.json"
    logs.write_text('{"resourceLogs": []}')
    code, _, err = _run(capsys, str(logs))
    assert code == 2 and "(invalid_otlp: the request holds no spans)" in err
    gz = tmp_path / "cut.gz"
    gz.write_bytes(gzip.compress(proto_message(rag_spans()))[:20])
    code, _, err = _run(capsys, str(gz))
    assert code == 2 and "looks gzipped but does not gunzip" in err
    # a good message beside a bad one: the trace is printed, the bad one named, exit 1
    good = tmp_path / "good.pb"
    good.write_bytes(proto_message(rag_spans()))
    code, out, err = _run(capsys, str(junk), str(good))
    assert code == 1 and out.startswith("trace ")
    assert err.startswith(f"ragpulse inspect: {junk}: invalid_otlp: ")
    code, _, err = _run(capsys)
    assert code == 2 and "nothing to inspect" in err
    code, _, err = _run(capsys, "--last", "3", str(good))
    assert code == 2 and "not both" in err


def test_collapse_folds_list_indexes() -> None:
    keys = [f"llm.input_messages.{i}.message.content" for i in range(12)] + ["a.0", "b"]
    assert collapse(keys) == ["a.0", "b", "llm.input_messages.*.message.content (×12)"]


def _produce(topics: KafkaTopics, partition: int, values: list[bytes]) -> None:
    producer = make_producer(KafkaSettings(bootstrap_servers=[topics.bootstrap_servers]))
    try:
        for value in values:
            producer.send(topics.otlp, value=value, partition=partition)
        producer.flush(timeout=10)
    finally:
        producer.close()


def test_last_n_messages_of_every_partition(
    kafka_topics: KafkaTopics, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new, other = rag_spans(), rag_spans(), genai_llm_span()
    root, *children = new
    _produce(kafka_topics, 0, [proto_message(old), json_message(children), proto_message([root])])
    _produce(kafka_topics, 2, [b"not otlp", proto_message(other)])
    monkeypatch.setenv("RAGPULSE_KAFKA__BOOTSTRAP_SERVERS", kafka_topics.bootstrap_servers)
    monkeypatch.setenv("RAGPULSE_KAFKA__OTLP_TOPIC", kafka_topics.otlp)
    code, out, err = _run(capsys, "--last", "2", "--json")
    shown = {t["trace_id"]: t for t in _json(out)}
    # the newest two of partition 0 (the split trace, whole), the newest two of partition 2
    assert set(shown) == {trace_hex(new), trace_hex(other)}
    assert shown[trace_hex(new)]["sources"] == [
        f"{kafka_topics.otlp}/0@1",
        f"{kafka_topics.otlp}/0@2",
    ]
    assert shown[trace_hex(new)]["root_span_seen"] is True
    assert code == 1 and err.startswith(f"ragpulse inspect: {kafka_topics.otlp}/2@0: invalid_otlp")
    # --topic names another one; a topic that does not exist is said so
    code, _, err = _run(capsys, "--last", "1", "--topic", kafka_topics.traces)
    assert code == 2 and "no message to inspect" in err
    code, _, err = _run(capsys, "--last", "1", "--topic", "no-such-topic-x")
    assert code == 2 and "no topic 'no-such-topic-x'" in err and kafka_topics.otlp in err


def test_unreachable_kafka_fails_within_the_timeout(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("RAGPULSE_KAFKA__BOOTSTRAP_SERVERS", f"127.0.0.1:{port}")
    started = time.monotonic()
    code, out, err = _run(capsys, "--last", "5", "--timeout", "1.5")
    assert time.monotonic() - started < 8
    assert (code, out) == (2, "")
    assert err.startswith(f"ragpulse: cannot reach Kafka at 127.0.0.1:{port}")
    assert err.count("\n") == 1


def test_a_trace_is_judged_on_all_its_spans_wherever_they_are(
    kafka_topics: KafkaTopics, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the retriever's span left in an older message than its root's and the model's, five
    # other apps' messages between them
    split = rag_spans()
    root, retrieve, generate = split
    assert retrieve.name == "retrieve"
    others = [genai_llm_span(f"conv-{i}") for i in range(5)]
    _produce(
        kafka_topics,
        0,
        [proto_message([retrieve]), *map(proto_message, others), proto_message([root, generate])],
    )
    monkeypatch.setenv("RAGPULSE_KAFKA__BOOTSTRAP_SERVERS", kafka_topics.bootstrap_servers)
    monkeypatch.setenv("RAGPULSE_KAFKA__OTLP_TOPIC", kafka_topics.otlp)
    tid = trace_hex(split)

    code, out, err = _run(capsys, "--last", "3", "--json")
    assert code == 0, err
    shown = {t["trace_id"]: t for t in _json(out)}
    # the traces of the last three messages only, the split one whole
    assert set(shown) == {tid, trace_hex(others[3]), trace_hex(others[4])}
    whole = shown[tid]
    assert whole["missing"] == [] and len(whole["record"]["contexts"]) == 3
    assert whole["sources"] == [f"{kafka_topics.otlp}/0@0", f"{kafka_topics.otlp}/0@6"]
    assert len(whole["spans"]) == 3 and whole["root_span_seen"] is True

    # without looking back it is what the last three messages alone hold
    code, out, _ = _run(capsys, "--last", "3", "--look-back", "0", "--json")
    (part,) = [t for t in _json(out) if t["trace_id"] == tid]
    assert "contexts" in part["missing"] and len(part["spans"]) == 2

    # one trace by its id, found among the newest messages of the topic (or by its prefix)
    for asked in (tid, tid[:12].upper()):
        code, out, err = _run(capsys, "--trace-id", asked)
        assert code == 0, err
        assert out.startswith(f"trace {tid}  (3 spans from 2 messages")
        assert "missing: nothing" in out and "contexts: 3" in out
    code, out, _ = _run(capsys, "--trace-id", trace_hex(others[0]), "--last", "3")
    assert code == 2 and out == ""  # not among the traces of the last three
    code, _, err = _run(capsys, "--trace-id", "0" * 32)
    assert code == 2 and f"no span of trace {'0' * 32} in the last 1000 messages" in err
    code, _, err = _run(capsys, "--trace-id", "not-hex")
    assert code == 2 and "--trace-id wants a hex trace id" in err


def test_store_adds_the_spans_the_service_consumed_from_older_messages(
    kafka_topics: KafkaTopics,
    sqlite_url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    split = rag_spans()
    root, retrieve, generate = split
    alone = genai_llm_span()
    # the retriever's message and another trace were consumed long ago (stored, gone from
    # what is read); the root's message is the newest on the topic
    ingest(sqlite_url, [proto_message([retrieve]), proto_message(alone)])
    _produce(kafka_topics, 0, [proto_message([root, generate])])
    monkeypatch.setenv("RAGPULSE_KAFKA__BOOTSTRAP_SERVERS", kafka_topics.bootstrap_servers)
    monkeypatch.setenv("RAGPULSE_KAFKA__OTLP_TOPIC", kafka_topics.otlp)
    monkeypatch.setenv("RAGPULSE_DATABASE__URL", sqlite_url)
    tid = trace_hex(split)

    code, out, _ = _run(capsys, "--last", "1", "--json")
    (part,) = _json(out)
    assert "contexts" in part["missing"]
    code, out, err = _run(capsys, "--last", "1", "--store", "--json")
    assert code == 0, err
    (whole,) = _json(out)  # the stored trace alone is not among those shown
    assert whole["trace_id"] == tid and whole["missing"] == []
    assert whole["sources"] == [f"{kafka_topics.otlp}/0@0", "store"]
    stored = [s for s in whole["spans"] if s["stored_only"]]
    assert [s["name"] for s in stored] == ["retrieve"] and stored[0]["used"] == []

    code, out, err = _run(capsys, "--trace-id", trace_hex(alone), "--store")
    assert code == 0, err
    assert out.startswith(f"trace {trace_hex(alone)}  (1 span from the store)")
    assert "from the store (its attributes are not kept there)" in out
    code, _, err = _run(capsys, "--trace-id", trace_hex(alone))
    assert code == 2 and "--store adds the spans the database holds" in err
