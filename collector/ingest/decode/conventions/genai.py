"""The OpenTelemetry GenAI semantic conventions (`gen_ai.*`), as `opentelemetry-util-genai`
and the instrumentations built on it (`opentelemetry-instrumentation-genai-openai`, ...)
write them.

Detected on any `gen_ai.*` attribute but the evaluation ones (`gen_ai.evaluation.*` only is
an evaluator's span, no GenAI operation). Attributes read:

- `gen_ai.operation.name` -> the stage (`STAGES`): chat / text_completion /
  generate_content / fetch_response are LLM calls, retrieval a RETRIEVER, embeddings an
  EMBEDDING, invoke_workflow a CHAIN, invoke_agent an AGENT, execute_tool a TOOL,
  create_agent an AGENT_SETUP: building an agent (OpenLLMetry's `create_agent` span around
  LangChain's factory) asks no model, so a trace of it alone is no request (`requests`:
  agent_setup); other names (plan, memory operations, a vendor's own) are no stage. A span without
  an operation name (the conventions before it was required) is an LLM call when it shows
  one (a model, token usage or messages), else no stage.
- `gen_ai.input.messages` -> input: the last user message; `gen_ai.output.messages` ->
  output: the first reply (the "parts" form as a JSON string on spans, structured on
  events; see `messages`). On the root workflow/agent span they are the user's question
  and the answer shown, on a chat span the model's prompt and reply.
- `gen_ai.system_instructions`, and system/developer messages among the input messages ->
  `metadata["system_instructions"]` (their text): what the model was told is no question,
  but it is what explains an answer, so it is kept beside the trace.
- `gen_ai.retrieval.documents` (JSON string or structured list of `{"id", "score"}`, plus
  the `content`/`text` and `url` that apps may add) -> docs;
  `gen_ai.retrieval.query.text` -> input of the retrieval span.
- `gen_ai.conversation.id` -> session_id; `user.id` -> user_id (the conventions have no
  user attribute of their own and point to OTel's); `gen_ai.response.model`, else
  `gen_ai.request.model` -> model.
- `gen_ai.usage.*` -> usage: `input_tokens`/`output_tokens` (and the deprecated
  `prompt_tokens`/`completion_tokens`) as `prompt_tokens`/`completion_tokens`, every other
  count under its own name with dots as underscores (`cache_read.input_tokens` ->
  `cache_read_input_tokens`, `reasoning.output_tokens` -> `reasoning_output_tokens`; the
  util's `cache_write.input_tokens` is the spec's `cache_creation_input_tokens`).
- `gen_ai.workflow.name`, `gen_ai.agent.name`, `gen_ai.prompt.name`/`gen_ai.prompt.version`,
  `gen_ai.data_source.id` -> the tags `workflow`, `agent`, `prompt`/`prompt_version`,
  `data_source` (low-cardinality names by the conventions' own rule: dimensions to compare).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from collector.ingest.decode import evaluations
from collector.ingest.decode.conventions import base, messages
from collector.ingest.decode.conventions.attributes import Attribute, Declared, log_record
from collector.ingest.decode.conventions.base import Fields, Span
from collector.ingest.decode.optional import FieldIssues

OPERATION: Final = "gen_ai.operation.name"
INPUT: Final = "gen_ai.input.messages"
OUTPUT: Final = "gen_ai.output.messages"
INSTRUCTIONS: Final = "gen_ai.system_instructions"
DOCUMENTS: Final = "gen_ai.retrieval.documents"
QUERY: Final = "gen_ai.retrieval.query.text"
USAGE_PREFIX: Final = "gen_ai.usage."
CONVERSATION: Final = "gen_ai.conversation.id"
USER: Final = "user.id"
MODELS: Final = ("gen_ai.response.model", "gen_ai.request.model")
STAGES: Final = {
    "chat": base.LLM,
    "text_completion": base.LLM,
    "generate_content": base.LLM,
    "fetch_response": base.LLM,
    "retrieval": base.RETRIEVER,
    "embeddings": base.EMBEDDING,
    "invoke_agent": base.AGENT,
    "create_agent": base.AGENT_SETUP,  # building an agent asks no model
    "invoke_workflow": base.CHAIN,
    "execute_tool": base.TOOL,
}
"""`gen_ai.operation.name` -> stage kind."""
LLM_SIGNS: Final = (*MODELS, USAGE_PREFIX, INPUT, OUTPUT)
"""Attributes (or prefixes) that show a span without an operation name is a model call."""
USAGE_NAMES: Final = {
    "input_tokens": "prompt_tokens",
    "output_tokens": "completion_tokens",
    "cache_write_input_tokens": "cache_creation_input_tokens",
}
"""`gen_ai.usage.<name>` (dots as underscores) -> the usage key, where they differ."""
TAGS: Final = (
    ("gen_ai.workflow.name", "workflow"),
    ("gen_ai.agent.name", "agent"),
    ("gen_ai.prompt.name", "prompt"),
    ("gen_ai.prompt.version", "prompt_version"),
    ("gen_ai.data_source.id", "data_source"),
)
"""Low-cardinality names kept as tags: attribute -> tag."""
EVALUATION_PREFIX: Final = "gen_ai.evaluation."
"""Attributes of an evaluator's span or event (`evaluations`), no GenAI operation."""
DETAILS_EVENT: Final = "gen_ai.client.inference.operation.details"
"""The log record of a model call's details (`otlp_details`), read like its span."""
_PARTS = '[{"type": "text", "content": str}, ...]'


def _stages() -> str:
    kinds: dict[str, list[str]] = {}
    for operation, kind in STAGES.items():
        kinds.setdefault(kind or "no stage", []).append(f"`{operation}`")
    return "; ".join(f"{', '.join(ops)} → {kind}" for kind, ops in kinds.items())


DECLARED: Final = Declared(
    name="genai",
    title="OTel GenAI semantic conventions",
    detected=f"any `gen_ai.*` attribute but `{EVALUATION_PREFIX}*` alone (an evaluator's)",
    attributes=(
        Attribute(
            OPERATION,
            f"string: {_stages()}; any other name → no stage (absent: an LLM call when "
            "the span has a model, usage or messages)",
            "the span's stage: LLM, RETRIEVER and AGENT make the trace a request; a trace "
            "of agent setup alone is none (not-request reason `agent_setup`)",
        ),
        Attribute(
            INPUT,
            "a JSON string (or, structured, a list) of messages "
            f'`[{{"role": "user"|"system"|"developer"|"assistant"|..., "parts": {_PARTS}}}]` '
            '(or `{"role", "content": str}`); text parts joined',
            "the span's input: the last `user` message (`question` on the workflow / agent "
            "span); `system` / `developer` messages → `metadata.system_instructions`",
        ),
        Attribute(
            OUTPUT,
            'as the input messages: `[{"role": "assistant", "parts": [...], '
            '"finish_reason": str}]`',
            "the span's output: the first reply (`answer` on the workflow / agent span)",
        ),
        Attribute(
            INSTRUCTIONS,
            f"a JSON string (or a list) of parts `{_PARTS}`, or a string",
            "`metadata.system_instructions` (their text)",
        ),
        Attribute(
            DOCUMENTS,
            "a JSON string (or, structured, a list) of a list of objects "
            '`{"id": str|int, "score": number, "content": str, "text": str, "url": str}`, '
            "every key optional, in rank order; an item that is a string is a text",
            "`contexts`: `id`, `score`, `url` as given, the text from `content` (else "
            '`text`); not a list: kept raw under `metadata._invalid["contexts"]`',
        ),
        Attribute(
            QUERY,
            "string",
            "a RETRIEVER span's input (the `question` when no workflow / agent span states one)",
        ),
        Attribute(CONVERSATION, "string", "`session_id`"),
        Attribute(USER, "string (OTel's own attribute; GenAI has no user attribute)", "`user_id`"),
        Attribute(MODELS[0], "string", "`model` (the last model call's)"),
        Attribute(MODELS[1], "string", "`model` when no response model"),
        Attribute(
            USAGE_PREFIX + "*",
            "int ≥ 0",
            "`usage`, under the name after `gen_ai.usage.` with dots as underscores "
            "(`cache_read.input_tokens` → `cache_read_input_tokens`), renamed: "
            + ", ".join(f"`{k}` → `{v}`" for k, v in USAGE_NAMES.items())
            + "; the total is their sum when not given; summed over the spans",
        ),
        *(Attribute(name, "string", f"the tag `{tag}`") for name, tag in TAGS),
        Attribute(
            INPUT,
            "structured messages, as on the span",
            "the model call's input, folded into its span (the span's own values win); "
            "with content in events only (`EVENT_ONLY`) the one place the question is",
            on=log_record(DETAILS_EVENT),
        ),
        Attribute(
            OUTPUT, "structured messages", "the model call's output", on=log_record(DETAILS_EVENT)
        ),
        Attribute(
            INSTRUCTIONS,
            "structured parts",
            "`metadata.system_instructions`",
            on=log_record(DETAILS_EVENT),
        ),
        *evaluations.ATTRIBUTES,
    ),
)
"""What this convention reads (the connect-your-app page is generated from it); the
details log record's other `gen_ai.*` attributes are read as on a span."""


class GenAI:
    """The OTel GenAI conventions."""

    name = "genai"

    def detect(self, span: Span) -> bool:
        return any(
            k.startswith("gen_ai.") and not k.startswith(EVALUATION_PREFIX) for k in span.attrs
        )

    def read(self, span: Span, issues: FieldIssues) -> Fields:
        attrs = span.attrs
        kind = stage(attrs)
        out: Fields = {"kind": kind} if kind else {}
        said = messages.parse(attrs.get(INPUT), span.max_depth)
        asked = messages.last_user(said)
        if asked is None:
            asked = base.first_str(attrs, (QUERY,))
        if asked is not None:
            out["input"] = asked
        replied = messages.first_reply(messages.parse(attrs.get(OUTPUT), span.max_depth))
        if replied is not None:
            out["output"] = replied
        told = [text for role, text in said if role in messages.INSTRUCTION_ROLES]
        told.extend(messages.instructions(attrs.get(INSTRUCTIONS), span.max_depth))
        if told:
            out["metadata"] = {"system_instructions": "\n".join(told)}
        raw_docs = attrs.get(DOCUMENTS)
        if raw_docs is not None:
            docs = documents(raw_docs, span.max_depth, issues)
            if docs:
                out["docs"] = docs
        for key, names in (
            ("session_id", (CONVERSATION,)),
            ("user_id", (USER,)),
            ("model", MODELS),
        ):
            value = base.first_str(attrs, names)
            if value is not None:
                out[key] = value
        counted = usage(attrs)
        if counted:
            out["usage"] = counted
        tags = {tag: value for name, tag in TAGS if (value := base.first_str(attrs, (name,)))}
        if tags:
            out["tags"] = tags
        return out


def stage(attrs: Mapping[str, Any]) -> str:
    """The stage kind of a GenAI span ('' for none)."""
    operation = attrs.get(OPERATION)
    if isinstance(operation, str):
        return STAGES.get(operation, "")
    if any(k.startswith(LLM_SIGNS) for k in attrs):
        return base.LLM
    return ""


def usage(attrs: Mapping[str, Any]) -> dict[str, int]:
    """Every `gen_ai.usage.*` count under the trace contract's names (see the module doc)."""
    counts: dict[str, int] = {}
    for key in [k for k in attrs if k.startswith(USAGE_PREFIX)]:
        value = base.count(attrs, key)
        if value is not None and value >= 0:
            name = key[len(USAGE_PREFIX) :].replace(".", "_")
            counts.setdefault(USAGE_NAMES.get(name, name), value)
    out = base.usage(
        counts.pop("prompt_tokens", None),
        counts.pop("completion_tokens", None),
        counts.pop("total_tokens", None),
    )
    return {**counts, **out}


def documents(value: Any, max_depth: int, issues: FieldIssues) -> list[dict[str, Any]]:
    """`gen_ai.retrieval.documents` as contexts, in rank order; a value that is not a list
    of documents is kept raw (`contexts`), an item that is not one keeps its rank empty."""
    items = base.json_value(value, max_depth) if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        issues.keep("contexts", base.as_text(value))
        return []
    docs = []
    for i, item in enumerate(items):
        doc: dict[str, Any] = {}
        if isinstance(item, str):
            doc["text"] = item
        elif isinstance(item, dict):
            doc_id = item.get("id")
            if isinstance(doc_id, str | int) and not isinstance(doc_id, bool):
                doc["id"] = str(doc_id)
            texts = [item[k] for k in ("content", "text") if isinstance(item.get(k), str)]
            if texts:
                doc["text"] = texts[0]
            if item.get("score") is not None:
                score = base.score(item["score"], f"contexts[{i}].score", issues)
                if score is not None:
                    doc["score"] = score
            if isinstance(item.get("url"), str):
                doc["url"] = item["url"]
        else:
            issues.keep(f"contexts[{i}]", base.as_text(item))
        docs.append(doc)
    return docs
