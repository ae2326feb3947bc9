"""LangChain values in the JSON that OpenLLMetry writes to `traceloop.entity.input` /
`traceloop.entity.output` (and their copies `gen_ai.task.input` / `gen_ai.task.output`).

The envelopes, as opentelemetry-instrumentation-langchain's callback handler writes them:
chain start `{"inputs": <value>, "tags", "metadata", "kwargs"}`, chain end
`{"outputs": <value>, "kwargs"}`, retriever start `{"query": "…", "tags", "metadata",
"kwargs"}`, retriever end `{"documents": [{"page_content", "metadata"} | "…"], "count"}`.
The Traceloop SDK's decorators write `{"args": [...], "kwargs": {...}}` and the bare return
value.

A value is a string; a dict naming it (`question`/`query`/`input`; `answer`/`output`/
`response`/`result`/`text`: the keys LangChain's chains use) or holding it alone; LangChain
messages, serialized by `to_json()` (`{"lc": 1, "id": [..., "HumanMessage"], "kwargs":
{"content", "type"}}`), as role/content dicts or as `(role, text)` pairs, alone, in a list
or under `messages` (LangGraph's state). The question is the last
user message, the answer the last AI message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from collector.ingest.decode.conventions import base, messages
from collector.ingest.decode.optional import FieldIssues

QUESTION_KEYS: Final = ("question", "query", "input")
ANSWER_KEYS: Final = ("answer", "output", "response", "result", "text")
_ROLES: Final = {
    "human": "user",
    "user": "user",
    "HumanMessage": "user",
    "HumanMessageChunk": "user",
    "ai": "assistant",
    "assistant": "assistant",
    "AIMessage": "assistant",
    "AIMessageChunk": "assistant",
    "system": "system",
    "SystemMessage": "system",
    "tool": "tool",
    "ToolMessage": "tool",
}
"""LangChain's message types and class names -> the GenAI role (others are kept as is)."""


def asked(entity_input: Any) -> str | None:
    """The question in an entity input (any envelope above)."""
    if isinstance(entity_input, dict):
        if "inputs" in entity_input:
            return question(entity_input["inputs"])
        if "args" in entity_input and "kwargs" in entity_input:
            return question(entity_input["args"]) or question(entity_input["kwargs"])
    return question(entity_input)


def answered(entity_output: Any) -> str | None:
    """The answer in an entity output (a retriever's documents are none)."""
    if isinstance(entity_output, dict):
        if "outputs" in entity_output:
            return answer(entity_output["outputs"])
        if "documents" in entity_output:
            return None
    return answer(entity_output)


def question(value: Any) -> str | None:
    """The user's text in one value."""
    if isinstance(value, str):
        return value or None
    found = message(value)
    if found is not None:
        return found[1] if found[0] == "user" else None
    if isinstance(value, list):
        said = [m for m in map(message, value) if m is not None]
        if said:
            return messages.last_user(said)
        return next((v for v in value if isinstance(v, str) and v), None)
    if isinstance(value, dict):
        return _named(value, QUESTION_KEYS, question)
    return None


def answer(value: Any) -> str | None:
    """The AI's text in one value."""
    if isinstance(value, str):
        return value or None
    found = message(value)
    if found is not None:
        return found[1] if found[0] == "assistant" else None
    if isinstance(value, list):
        said = [m[1] for m in map(message, value) if m is not None and m[0] == "assistant"]
        return said[-1] if said else None
    if isinstance(value, dict):
        return _named(value, ANSWER_KEYS, answer)
    return None


def message(value: Any) -> messages.Message | None:
    """One LangChain message as (role, text), or None when the value is none."""
    if isinstance(value, list | tuple):
        if len(value) == 2 and all(isinstance(v, str) for v in value) and value[0] in _ROLES:
            return _ROLES[value[0]], value[1]
        return None
    if not isinstance(value, dict):
        return None
    if value.get("lc") == 1 and isinstance(value.get("kwargs"), dict):
        kwargs = value["kwargs"]
        ids = value.get("id")
        role = kwargs.get("type") or (ids[-1] if isinstance(ids, list) and ids else None)
        content = kwargs.get("content")
    else:
        role = value.get("role") or value.get("type")
        content = value.get("content")
    if not isinstance(role, str) or content is None:
        return None
    text = messages.message_text({"content": content})
    return (_ROLES.get(role, role), text) if text is not None else None


def documents(entity_output: Any, issues: FieldIssues) -> list[dict[str, Any]]:
    """A retriever's `{"documents": [...]}`: text, and the id, score and url its metadata
    holds (`id`/`doc_id`; `score`, or `relevance_score` as LangChain's rerankers write it;
    `url`). A serialized `Document` (`{"lc": 1, "kwargs": {"id", "page_content", ...}}`)
    gives its own id."""
    if not isinstance(entity_output, dict):
        return []
    items = entity_output.get("documents")
    if not isinstance(items, list):
        return []
    out = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            out.append({"text": item})
            continue
        if not isinstance(item, dict):
            continue
        if item.get("lc") == 1 and isinstance(item.get("kwargs"), dict):
            item = item["kwargs"]
        out.append(document(item, item.get("metadata"), f"contexts[{i}].score", issues))
    return out


def document(
    fields: Mapping[str, Any], metadata: Any, path: str, issues: FieldIssues
) -> dict[str, Any]:
    """One document's {id, text, score, url} from its fields (`id`, `page_content`) and
    its metadata (a dict)."""
    meta = metadata if isinstance(metadata, dict) else {}
    doc: dict[str, Any] = {}
    doc_id = fields.get("id")
    if doc_id is None:
        doc_id = next((meta[k] for k in ("id", "doc_id") if meta.get(k) is not None), None)
    if isinstance(doc_id, str | int) and not isinstance(doc_id, bool):
        doc["id"] = str(doc_id)
    text = fields.get("page_content")
    if isinstance(text, str):
        doc["text"] = text
    raw = next((meta[k] for k in ("score", "relevance_score") if k in meta), None)
    score = base.score(raw, path, issues)
    if score is not None:
        doc["score"] = score
    if isinstance(meta.get("url"), str):
        doc["url"] = meta["url"]
    return doc


def _named(
    value: dict[str, Any], keys: tuple[str, ...], read: Callable[[Any], str | None]
) -> str | None:
    """The text under `messages`, under a well-known key, or a dict's only value."""
    if isinstance(value.get("messages"), list):
        return read(value["messages"])
    for key in keys:
        if key in value:
            found = read(value[key])
            if found is not None:
                return found
    if len(value) == 1:
        only = next(iter(value.values()))
        return only if isinstance(only, str) and only else None
    return None
