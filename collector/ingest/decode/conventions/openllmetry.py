"""OpenLLMetry (Traceloop's instrumentors, e.g. opentelemetry-instrumentation-langchain, and
the Traceloop SDK), from the installed 0.62.4 and the older releases' source.

Detected on any `traceloop.*` attribute, on `llm.request.type`, on the flattened
`gen_ai.prompt.N.*` / `gen_ai.completion.N.*` (0.17-0.54; before 0.17 `llm.prompts.N.*` /
`llm.completions.N.*`), and on vector-DB result span events.

- Stage: `traceloop.span.kind` workflow/task -> CHAIN, agent -> AGENT, tool -> TOOL; the
  retriever span (0.53+: `gen_ai.operation.name` `vector_db_retrieve`, named
  `vector_db_retrieve <retriever>`) and a span with result events -> RETRIEVER; an LLM span
  before 0.55 by `llm.request.type` (chat/completion -> LLM, embedding -> EMBEDDING,
  rerank -> RERANKER).
- Question / answer: `traceloop.entity.input` / `traceloop.entity.output` (JSON, read by
  `langchain_values`; else `gen_ai.task.input` / `gen_ai.task.output`, the same JSON that
  0.53+ also writes). A tool's arguments and result are neither. On LLM spans before 0.55,
  the last user message of the flattened prompt and the first completion (`.role`,
  `.content`; a content that is a JSON list of blocks gives its text).
- Documents: the retriever span's entity output (`langchain_values.documents`), the
  vector-DB instrumentors' `db.query.result` / `db.search.result` events (`db_results`).
- `traceloop.association.properties.<key>` (the SDK's `set_association_properties` /
  `Associations`, and the LangChain run's `metadata`, which the instrumentor copies there):
  `session_id` (else `chat_id`, the SDK docs' example) -> session, `user_id` -> user, every
  other key a tag, except LangChain's and LangGraph's own run metadata (`ls_*`, `lc_*`,
  `langgraph_*`, `checkpoint_*`). `traceloop.workflow.name` -> the tag `workflow`.
- Names of older releases that `genai` does not read: `llm.usage.total_tokens` (before
  0.55), `llm.usage.prompt_tokens` / `llm.usage.completion_tokens`, `llm.request.model` /
  `llm.response.model` (before 0.17).

The 0.55+ LLM spans' messages (`gen_ai.input.messages` / `gen_ai.output.messages`), model,
usage and `gen_ai.conversation.id` (the SDK's `set_conversation_id`, LangGraph's
`thread_id`) are the GenAI conventions', read by `genai`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from collector.ingest.decode.conventions import base, db_results, langchain_values, messages
from collector.ingest.decode.conventions.attributes import Attribute, Declared
from collector.ingest.decode.conventions.base import Fields, Span
from collector.ingest.decode.optional import FieldIssues

SPAN_KIND: Final = "traceloop.span.kind"
REQUEST_TYPE: Final = "llm.request.type"
ASSOCIATION: Final = "traceloop.association.properties."
WORKFLOW: Final = "traceloop.workflow.name"
ENTITY_INPUT: Final = ("traceloop.entity.input", "gen_ai.task.input")
ENTITY_OUTPUT: Final = ("traceloop.entity.output", "gen_ai.task.output")
RETRIEVE: Final = "vector_db_retrieve"
PROMPTS: Final = ("gen_ai.prompt.", "llm.prompts.")
COMPLETIONS: Final = ("gen_ai.completion.", "llm.completions.")
STAGES: Final = {"workflow": base.CHAIN, "task": base.CHAIN, "agent": base.AGENT, "tool": base.TOOL}
"""`traceloop.span.kind` -> stage kind."""
REQUEST_STAGES: Final = {
    "chat": base.LLM,
    "completion": base.LLM,
    "embedding": base.EMBEDDING,
    "rerank": base.RERANKER,
}
"""`llm.request.type` -> stage kind."""
SESSION_KEYS: Final = ("session_id", "chat_id")
USER_KEYS: Final = ("user_id",)
FRAMEWORK_KEYS: Final = ("ls_", "lc_", "langgraph_", "checkpoint_")
"""Association-property prefixes that are LangChain's/LangGraph's run metadata, no tags."""
OPERATION: Final = "gen_ai.operation.name"
_ENTITY_IN = (
    'string: JSON, LangChain\'s envelopes `{"inputs": ..., "tags", "metadata", '
    '"kwargs"}` (chain start), `{"query": str, ...}` (retriever start), the SDK '
    'decorators\' `{"args": [...], "kwargs": {...}}`, or a bare value'
)
_ENTITY_OUT = (
    'string: JSON, `{"outputs": ..., "kwargs"}` (chain end), the retriever\'s '
    '`{"documents": [{"page_content": str, "metadata": {...}} | str], '
    '"count"}`, or a bare value'
)


def _flattened_attributes(prefix: str, becomes: str, until: str) -> tuple[Attribute, ...]:
    return (
        Attribute(f"{prefix}{{i}}.role", "string: `user`, `system`, `assistant`, ...", becomes),
        Attribute(
            f"{prefix}{{i}}.content",
            f"string (or a JSON list of content blocks, whose text parts count; {until})",
            becomes,
        ),
    )


def _kinds(stages: Mapping[str, str]) -> str:
    return ", ".join(f"`{name}` → {kind}" for name, kind in stages.items())


DECLARED: Final = Declared(
    name="openllmetry",
    title="OpenLLMetry (Traceloop)",
    detected=f"any `traceloop.*` attribute, `{REQUEST_TYPE}`, the flattened "
    "`gen_ai.prompt.{i}.*` / `gen_ai.completion.{i}.*` (or `llm.prompts.{i}.*` / "
    "`llm.completions.{i}.*`), or a `db.query.result` / `db.search.result` span event; "
    "its `gen_ai.*` messages, model, usage and conversation id are read by the GenAI "
    "convention",
    attributes=(
        Attribute(SPAN_KIND, f"string: {_kinds(STAGES)}", "the span's stage"),
        Attribute(
            OPERATION,
            f"string: `{RETRIEVE}` → RETRIEVER (so is a span named `{RETRIEVE} <name>`, or "
            "one with result events)",
            "the span's stage",
        ),
        Attribute(
            REQUEST_TYPE,
            f"string: {_kinds(REQUEST_STAGES)} (before 0.55)",
            "the span's stage",
        ),
        Attribute(
            ENTITY_INPUT[0],
            _ENTITY_IN,
            "the span's input: `question` on a workflow/task/agent span (the last user "
            "message of LangChain messages); not read on a tool span",
        ),
        Attribute(
            ENTITY_INPUT[1], f"as `{ENTITY_INPUT[0]}`", f"when `{ENTITY_INPUT[0]}` is absent"
        ),
        Attribute(
            ENTITY_OUTPUT[0],
            _ENTITY_OUT,
            "`answer` (the last AI message); a retriever's documents → `contexts` "
            "(`page_content` the text; `id` / `doc_id`, `score`, `url` from `metadata`)",
        ),
        Attribute(
            ENTITY_OUTPUT[1], f"as `{ENTITY_OUTPUT[0]}`", f"when `{ENTITY_OUTPUT[0]}` is absent"
        ),
        *_flattened_attributes(
            PROMPTS[0], "an LLM span's input: the last `user` message", "0.17–0.54"
        ),
        *_flattened_attributes(
            COMPLETIONS[0], "an LLM span's output: the first completion", "0.17–0.54"
        ),
        *_flattened_attributes(PROMPTS[1], "as `gen_ai.prompt.{i}.*`", "before 0.17"),
        *_flattened_attributes(COMPLETIONS[1], "as `gen_ai.completion.{i}.*`", "before 0.17"),
        Attribute(
            ASSOCIATION + "session_id",
            "string or int (else `.chat_id`)",
            "`session_id`",
        ),
        Attribute(ASSOCIATION + "chat_id", "string or int", "`session_id`"),
        Attribute(ASSOCIATION + "user_id", "string or int", "`user_id`"),
        Attribute(
            ASSOCIATION + "<key>",
            'string, int, float or bool (`"true"` / `"false"`); the SDK\'s '
            "`set_association_properties`, LangChain's run `metadata`",
            "the tag `<key>`, except LangChain's and LangGraph's own "
            + ", ".join(f"`{p}*`" for p in FRAMEWORK_KEYS),
        ),
        Attribute(WORKFLOW, "string", "the tag `workflow`"),
        Attribute("llm.response.model", "string", "`model` (before 0.17)"),
        Attribute("llm.request.model", "string", "`model` when no response model"),
        Attribute("llm.usage.prompt_tokens", "int", "`usage.prompt_tokens`"),
        Attribute("llm.usage.completion_tokens", "int", "`usage.completion_tokens`"),
        Attribute("llm.usage.total_tokens", "int", "`usage.total_tokens` (before 0.55)"),
        *db_results.ATTRIBUTES,
    ),
    not_keys=frozenset({"tags."}),
)
"""What this convention reads (the connect-your-app page is generated from it)."""


class OpenLLMetry:
    """Traceloop's OpenLLMetry conventions."""

    name = "openllmetry"

    def detect(self, span: Span) -> bool:
        attrs = span.attrs
        if any(k.startswith("traceloop.") or k == REQUEST_TYPE for k in attrs):
            return True
        if any(base.indexes(attrs, p) for p in (*PROMPTS, *COMPLETIONS)):
            return True
        return db_results.has_results(span.events)

    def read(self, span: Span, issues: FieldIssues) -> Fields:
        attrs = span.attrs
        kind = _kind(span)
        out: Fields = {"kind": kind} if kind else {}
        if kind != base.TOOL:
            entity_in = _entity(attrs, ENTITY_INPUT, span.max_depth)
            question = langchain_values.asked(entity_in) if entity_in is not None else None
            entity_out = _entity(attrs, ENTITY_OUTPUT, span.max_depth)
            answer = langchain_values.answered(entity_out) if entity_out is not None else None
            docs = langchain_values.documents(entity_out, issues)
            docs += db_results.documents(span.events, issues, span.max_depth)
            if docs:
                out["docs"] = docs
            if question is None:
                question = messages.last_user(_flattened(attrs, PROMPTS, span.max_depth))
            if answer is None:
                answer = messages.first_reply(_flattened(attrs, COMPLETIONS, span.max_depth))
            if question is not None:
                out["input"] = question
            if answer is not None:
                out["output"] = answer
        out.update(_associations(attrs, issues))
        model = base.first_str(attrs, ("llm.response.model", "llm.request.model"))
        if model is not None:
            out["model"] = model
        usage = base.usage(
            base.count(attrs, "llm.usage.prompt_tokens"),
            base.count(attrs, "llm.usage.completion_tokens"),
            base.count(attrs, "llm.usage.total_tokens"),
        )
        if usage:
            out["usage"] = usage
        return out


def _kind(span: Span) -> str:
    attrs = span.attrs
    if attrs.get(OPERATION) == RETRIEVE or span.name.startswith(RETRIEVE + " "):
        return base.RETRIEVER
    if db_results.has_results(span.events):
        return base.RETRIEVER
    kind = attrs.get(SPAN_KIND)
    if isinstance(kind, str) and kind in STAGES:
        return STAGES[kind]
    request = attrs.get(REQUEST_TYPE)
    if isinstance(request, str) and request in REQUEST_STAGES:
        return REQUEST_STAGES[request]
    return ""


def _entity(attrs: Mapping[str, Any], names: tuple[str, ...], max_depth: int) -> Any:
    """The parsed JSON of the first of these attributes present (a string that is no JSON
    is itself the value: the SDK writes a bare return value)."""
    for name in names:
        value = attrs.get(name)
        if isinstance(value, str) and value:
            parsed = base.json_value(value, max_depth)
            return parsed if parsed is not None else value
    return None


def _flattened(
    attrs: Mapping[str, Any], prefixes: tuple[str, ...], max_depth: int
) -> list[messages.Message]:
    """The `{prefix}{N}.role` / `{prefix}{N}.content` messages of the first prefix present;
    a content that is a JSON list of content blocks gives their text parts."""
    for prefix in prefixes:
        found = base.indexes(attrs, prefix)
        if not found:
            continue
        out = []
        for i in found:
            role = attrs.get(f"{prefix}{i}.role")
            content = attrs.get(f"{prefix}{i}.content")
            if not isinstance(content, str):
                continue
            text = content
            if content.startswith("[{"):
                blocks = base.json_value(content, max_depth)
                joined = messages.message_text({"content": blocks}) if blocks else None
                text = joined if joined is not None else content
            out.append((role if isinstance(role, str) else "", text))
        return out
    return []


def _associations(attrs: Mapping[str, Any], issues: FieldIssues) -> Fields:
    """Session, user and tags from the association properties and the workflow name."""
    props = {k[len(ASSOCIATION) :]: k for k in attrs if k.startswith(ASSOCIATION)}
    out: Fields = {}
    for field, keys in (("session_id", SESSION_KEYS), ("user_id", USER_KEYS)):
        for key in keys:
            value = attrs.get(props[key]) if key in props else None
            if isinstance(value, str | int) and not isinstance(value, bool) and value != "":
                out[field] = str(value)
                break
    tags: dict[str, Any] = {}
    for key, name in props.items():
        if key in SESSION_KEYS or key in USER_KEYS or key.startswith(FRAMEWORK_KEYS):
            continue
        value = attrs.get(name)
        if isinstance(value, bool):
            tags[key] = "true" if value else "false"
        elif isinstance(value, str | int):
            tags[key] = value
        elif isinstance(value, float):
            if math.isfinite(value):
                tags[key] = value
            else:
                issues.keep(f"tags.{key}", base.as_text(value))
    workflow = base.first_str(attrs, (WORKFLOW,))
    if workflow is not None:
        tags.setdefault("workflow", workflow)
    if tags:
        out["tags"] = tags
    return out
