"""The OpenTelemetry GenAI semantic conventions (`gen_ai.*`).

Detected on any `gen_ai.*` attribute but the evaluation ones (`gen_ai.evaluation.*` only is
an evaluator's span, no LLM call). The stage comes from `gen_ai.operation.name`; a span
with GenAI attributes and no operation name is an LLM call (the conventions' older form).
An LLM call's question is the last user message of `gen_ai.input.messages`, its answer the
first reply in `gen_ai.output.messages` (JSON, "parts" form: `messages`).
"""

from __future__ import annotations

from typing import Final

from collector.ingest.decode.conventions import base, messages
from collector.ingest.decode.conventions.base import Fields, Span
from collector.ingest.decode.optional import FieldIssues

OPERATION: Final = "gen_ai.operation.name"
INPUT: Final = "gen_ai.input.messages"
OUTPUT: Final = "gen_ai.output.messages"
STAGES: Final = {
    "chat": base.LLM,
    "text_completion": base.LLM,
    "generate_content": base.LLM,
    "retrieval": base.RETRIEVER,
    "embeddings": base.EMBEDDING,
    "invoke_agent": base.AGENT,
    "create_agent": base.AGENT,
    "invoke_workflow": base.CHAIN,
    "execute_tool": base.TOOL,
}
"""`gen_ai.operation.name` -> stage kind."""


class GenAI:
    """The OTel GenAI conventions."""

    name = "genai"

    def detect(self, span: Span) -> bool:
        return any(
            k.startswith("gen_ai.") and not k.startswith("gen_ai.evaluation.") for k in span.attrs
        )

    def read(self, span: Span, issues: FieldIssues) -> Fields:
        attrs = span.attrs
        operation = attrs.get(OPERATION)
        kind = STAGES.get(operation, "") if isinstance(operation, str) else base.LLM
        out: Fields = {"kind": kind} if kind else {}
        asked = messages.last_user(messages.parse(attrs.get(INPUT), span.max_depth))
        if asked is not None:
            out["input"] = asked
        replied = messages.first_reply(messages.parse(attrs.get(OUTPUT), span.max_depth))
        if replied is not None:
            out["output"] = replied
        for key, names in (
            ("session_id", ("gen_ai.conversation.id",)),
            ("model", ("gen_ai.response.model", "gen_ai.request.model")),
        ):
            value = base.first_str(attrs, names)
            if value is not None:
                out[key] = value
        usage = base.usage(
            base.count(attrs, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
            base.count(attrs, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
            base.count(attrs, "gen_ai.usage.total_tokens"),
        )
        if usage:
            out["usage"] = usage
        return out
