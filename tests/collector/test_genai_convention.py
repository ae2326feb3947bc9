"""The GenAI convention's edges that the real instrumentors do not reach: older forms,
values of unexpected shapes, and the log records that must not become traces."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

from collector.ingest.decode.errors import DecodeError
from collector.ingest.decode.otlp_details import EVENT_NAME
from collector.ingest.decode.otlp_logs import decode_otlp_logs
from collector.ingest.decode.otlp_mapping import record_from_spans, summarize_span

TRACE = 0x0AF7651916CD43DD8448EB211C80319C
SPAN = 0x00F067AA0BA902B7


def _summary(attrs: dict[str, Any], parent: str = "") -> dict[str, Any]:
    return summarize_span(attrs, parent=parent, name="s", start_ns=0, end_ns=1, resource={})


@pytest.mark.parametrize(
    ("attrs", "kind"),
    [
        ({"gen_ai.operation.name": "execute_tool"}, "TOOL"),
        ({"gen_ai.operation.name": "invoke_workflow"}, "CHAIN"),
        ({"gen_ai.operation.name": "fetch_response"}, "LLM"),
        ({"gen_ai.operation.name": "plan"}, ""),  # planning is no stage of a RAG request
        # before the operation name was required: a model call shows itself ...
        ({"gen_ai.system": "openai", "gen_ai.request.model": "m"}, "LLM"),
        ({"gen_ai.usage.input_tokens": 3}, "LLM"),
        # ... and a span that merely carries a conversation id is none
        ({"gen_ai.conversation.id": "c-1"}, ""),
    ],
)
def test_the_stage_comes_from_the_operation_or_the_evidence_of_a_model_call(
    attrs: dict[str, Any], kind: str
) -> None:
    assert _summary(attrs)["kind"] == kind


def test_every_usage_count_is_kept_under_the_contracts_names() -> None:
    summary = _summary(
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.usage.input_tokens": 100,
            "gen_ai.usage.output_tokens": 20,
            "gen_ai.usage.cache_read.input_tokens": 40,
            "gen_ai.usage.cache_write.input_tokens": 10,  # util-genai 1.3b0's name
            "gen_ai.usage.reasoning.output_tokens": 5,
            "gen_ai.usage.audio.input_tokens": 7,
            "gen_ai.usage.output_tokens_bogus": "many",  # not a count: left out
        }
    )
    assert summary["usage"] == {
        "prompt_tokens": 100,
        "completion_tokens": 20,
        "total_tokens": 120,
        "cache_read_input_tokens": 40,
        "cache_creation_input_tokens": 10,
        "reasoning_output_tokens": 5,
        "audio_input_tokens": 7,
    }
    older = _summary({"gen_ai.usage.prompt_tokens": 9, "gen_ai.usage.completion_tokens": 1})
    assert older["usage"] == {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10}


def test_retrieval_documents_of_unexpected_shapes_keep_their_rank() -> None:
    summary = _summary(
        {
            "gen_ai.operation.name": "retrieval",
            "gen_ai.retrieval.documents": [  # structured, as on an event
                {"id": 7, "score": 0.5, "text": "seven", "url": "https://kb/7"},
                "a bare text",
                {"id": "nan-doc", "score": float("nan")},
                42,
            ],
        }
    )
    assert summary["docs"] == [
        {"id": "7", "score": 0.5, "text": "seven", "url": "https://kb/7"},
        {"text": "a bare text"},
        {"id": "nan-doc"},
        {},
    ]
    assert summary["invalid"] == {"contexts[2].score": "nan", "contexts[3]": "42"}
    broken = _summary({"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.documents": "[{"})
    assert "docs" not in broken and broken["invalid"] == {"contexts": "[{"}


def test_system_instructions_in_every_form_are_kept_beside_the_trace() -> None:
    parts = '[{"type": "text", "content": "Be brief."}, {"type": "text", "content": "Cite."}]'
    assert _summary({"gen_ai.system_instructions": parts})["metadata"] == {
        "system_instructions": "Be brief.\nCite."
    }
    plain = _summary({"gen_ai.operation.name": "chat", "gen_ai.system_instructions": "Be kind."})
    assert plain["metadata"] == {"system_instructions": "Be kind."}
    history = (
        '[{"role": "developer", "parts": [{"type": "text", "content": "Use Russian."}]},'
        ' {"role": "user", "parts": [{"type": "text", "content": "Привет"}]}]'
    )
    in_messages = _summary({"gen_ai.operation.name": "chat", "gen_ai.input.messages": history})
    assert in_messages["input"] == "Привет"
    assert in_messages["metadata"] == {"system_instructions": "Use Russian."}


def test_without_a_question_on_the_root_the_retrieval_query_comes_before_the_prompt() -> None:
    root = "a" * 16
    spans = {
        root: _summary({"http.route": "/ask"}),
        "b" * 16: _summary(
            {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.query.text": "limits?"},
            parent=root,
        ),
        "c" * 16: _summary(
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": '[{"role": "user", "content": "Context: ... limits?"}]',
            },
            parent=root,
        ),
    }
    assert record_from_spans("f" * 32, spans).question == "limits?"


def _details(**kw: Any) -> bytes:
    """One OTLP logs message holding a details record (`kw` overrides its trace flags,
    span id, event name and attributes)."""
    exporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    span = SpanContext(
        TRACE, kw.get("span", SPAN), is_remote=True, trace_flags=TraceFlags(kw.get("flags", 1))
    )
    provider.get_logger("tests").emit(
        timestamp=1_764_000_000_000_000_000,
        context=set_span_in_context(NonRecordingSpan(span)),
        severity_number=SeverityNumber.INFO,
        event_name=kw.get("name", EVENT_NAME),
        attributes=kw.get(
            "attrs",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.usage.input_tokens": 5,
                "gen_ai.output.messages": [
                    {"role": "assistant", "parts": [{"type": "text", "content": "Hi"}]}
                ],
            },
        ),
    )
    provider.shutdown()
    data: bytes = encode_logs(exporter.get_finished_logs()).SerializeToString()
    return data


def test_a_details_record_completes_its_span_without_counting_twice() -> None:
    (fragment,) = decode_otlp_logs(_details()).fragments
    assert fragment.trace_id == f"{TRACE:032x}"
    span_id = f"{SPAN:016x}"
    (key,) = fragment.spans
    assert key == f"{span_id}:details" and fragment.spans[key]["of"] == span_id
    alone = record_from_spans(fragment.trace_id, fragment.spans)
    assert alone.answer == "Hi" and alone.latency_stages is None  # no stage on its own
    span = summarize_span(
        {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 5},
        parent="",
        name="chat",
        start_ns=0,
        end_ns=10**6,
        resource={},
    )
    whole = record_from_spans(fragment.trace_id, {span_id: span, **fragment.spans})
    assert whole.answer == "Hi" and whole.usage == {"prompt_tokens": 5, "total_tokens": 5}
    assert whole.latency_ms == 1.0


@pytest.mark.parametrize(
    "kw",
    [
        {"flags": 0},  # the span was not sampled: it will never arrive
        {"span": 0},  # no span to complete
        {"name": "gen_ai.evaluation.result"},  # another event (read as an evaluation)
    ],
)
def test_records_that_complete_no_traced_span_are_ignored(kw: dict[str, Any]) -> None:
    assert decode_otlp_logs(_details(**kw)).fragments == []


def test_a_details_record_holding_a_nul_is_refused_like_a_span() -> None:
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": '[{"role": "user", "content": "a\\u0000"}]',
    }
    with pytest.raises(DecodeError, match="NUL"):
        decode_otlp_logs(_details(attrs=attrs))
