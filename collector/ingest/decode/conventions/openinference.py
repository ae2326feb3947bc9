"""OpenInference (Arize Phoenix's instrumentors: LangChain, LlamaIndex, OpenAI, ...).

Every OpenInference span carries `openinference.span.kind` (CHAIN, AGENT, LLM, RETRIEVER,
RERANKER, EMBEDDING, TOOL, PROMPT, ...). Attributes read:

- question / answer: `input.value` / `output.value` (with `input.mime_type` /
  `output.mime_type`); a JSON value is unwrapped to its text (`io_values`: a chain's
  `{"question": ...}`, a serialized LangChain message, a list of messages, content blocks).
  On LLM spans first the last user message of `llm.input_messages.{i}.message.{role,
  content}` (or its text parts, `message.contents.{j}.message_content.{type,text}`; else
  the last of `llm.prompts`, a completion model's prompts) and the first reply of
  `llm.output_messages.{i}.message.*`.
- documents: `retrieval.documents.{i}.document.{id,content,score,metadata}` (a reranker's
  output under `reranker.output_documents.`); an id or score missing there is read from
  the document's `metadata` JSON (`id`/`doc_id`, `score`), where the LangChain
  instrumentor puts them; the url is the metadata's `url`, else its `source` when that is
  an http(s) URL (LangChain's web loaders).
- `session.id`, `user.id`, `llm.model_name`, `llm.token_count.{prompt,completion,total}`
  (on an EMBEDDING span the usage's `embedding_tokens`: an embedding call's input is no
  part of the answer's prompt).
- `metadata` (a JSON object: the app's `using_metadata`, LangChain's run metadata), and
  `embedding.model_name` as the metadata's `embedding_model` (a changed embedding model is
  a classic cause of a retrieval regression).
- content an instrumentor hid (`__REDACTED__`, with `OPENINFERENCE_HIDE_INPUTS`,
  `..._OUTPUTS`, `..._INPUT_MESSAGES`, `..._OUTPUT_MESSAGES`, `..._RETRIEVAL_DOCUMENTS`) is
  no content: the trace arrives without that question, answer or document text.
- `tag.tags` (a list of strings, the app's `using_tags`): each tag `t` becomes the trace
  tag `t` with the value `"true"`, so a tag can be a sampling filter
  (`sampling.tag_filters: {"beta": ["true"]}`) or a group label like any other tag.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from collector.ingest.decode.conventions import base, io_values
from collector.ingest.decode.conventions.attributes import Attribute, Declared
from collector.ingest.decode.conventions.base import Fields, Span
from collector.ingest.decode.optional import FieldIssues

KIND: Final = "openinference.span.kind"
REDACTED: Final = "__REDACTED__"
"""What an instrumentor writes for content it hides (`OPENINFERENCE_HIDE_*`): no content."""
_WEB: Final = ("http://", "https://")
INPUT_MESSAGES: Final = "llm.input_messages."
OUTPUT_MESSAGES: Final = "llm.output_messages."
DOCUMENTS: Final = "retrieval.documents."
RERANKED: Final = "reranker.output_documents."
_DOC_ID = "string or int (else the metadata's `id` / `doc_id`)"
_DOC_META = (
    "string: a JSON object; its `url` (else its `source` when that is an http(s) URL), "
    "and `id` / `doc_id` / `score` when the attributes above lack them"
)


def _message_attributes(prefix: str, becomes: str) -> tuple[Attribute, ...]:
    at = f"{prefix}{{i}}.message."
    return (
        Attribute(at + "role", "string: `user`, `system`, `assistant`, `tool`, ...", becomes),
        Attribute(at + "content", f"string (`{REDACTED}` is no content)", becomes),
        Attribute(
            at + "contents.{j}.message_content.type",
            "string: `text` (absent: text), `image`, ...",
            "which parts are text, when `content` is absent",
        ),
        Attribute(at + "contents.{j}.message_content.text", "string", "the message's text, joined"),
    )


def _document_attributes(prefix: str, note: str) -> tuple[Attribute, ...]:
    at = f"{prefix}{{i}}.document."
    return (
        Attribute(at + "id", _DOC_ID, f"`contexts[i].id`{note}"),
        Attribute(at + "content", "string", f"`contexts[i].text`{note}"),
        Attribute(at + "score", "number (NaN/±Inf kept raw)", f"`contexts[i].score`{note}"),
        Attribute(at + "metadata", _DOC_META, f"`contexts[i].url` (and id, score){note}"),
    )


DECLARED: Final = Declared(
    name="openinference",
    title="OpenInference",
    detected=f"`{KIND}` present",
    attributes=(
        Attribute(
            KIND,
            "string: `CHAIN`, `AGENT`, `LLM`, `RETRIEVER`, `RERANKER`, `EMBEDDING`, `TOOL`, "
            "... (any case)",
            "the span's stage: LLM, RETRIEVER, RERANKER and AGENT make the trace a request; "
            "stage latencies",
        ),
        Attribute(
            "input.value",
            'string: text, or JSON (`{"question"|"query"|"query_str"|"input"|'
            '"message"|"messages": ...}`, a serialized LangChain or OpenAI message, a '
            "list of messages, content blocks), unwrapped to its text",
            "the span's input: `question` on the root / a CHAIN or AGENT span, the query of "
            "a RETRIEVER",
        ),
        Attribute(
            "input.mime_type",
            "string: `text/plain` or `application/json`",
            "how `input.value` is read",
        ),
        Attribute(
            "output.value",
            'string: text, or JSON (`{"answer"|"output"|"response"|"result"|'
            '"messages": ...}`, a message, a list of messages), unwrapped to its text',
            "`answer` on the root / a CHAIN or AGENT span",
        ),
        Attribute(
            "output.mime_type",
            "string: `text/plain` or `application/json`",
            "how `output.value` is read",
        ),
        *_message_attributes(INPUT_MESSAGES, "an LLM span's input: the last `user` message's text"),
        *_message_attributes(OUTPUT_MESSAGES, "an LLM span's output: the first reply (not `user`)"),
        Attribute(
            "llm.prompts",
            "array of strings (a completion model's prompts)",
            "an LLM span's input when it has no input messages: the last prompt",
        ),
        *_document_attributes(DOCUMENTS, ""),
        *_document_attributes(
            RERANKED, ": a reranker's output replaces the retrieved (the last reranker's)"
        ),
        Attribute("session.id", "string", "`session_id`"),
        Attribute("user.id", "string", "`user_id`"),
        Attribute("llm.model_name", "string", "`model` (the last model call's)"),
        Attribute(
            "llm.token_count.prompt",
            "int",
            "`usage.prompt_tokens`; on an EMBEDDING span `usage.embedding_tokens` (summed over "
            "the spans, less a wrapper's repeat of its inner calls')",
        ),
        Attribute("llm.token_count.completion", "int", "`usage.completion_tokens`"),
        Attribute(
            "llm.token_count.total",
            "int",
            "`usage.total_tokens` (else prompt + completion); an EMBEDDING span's "
            "`usage.embedding_tokens`",
        ),
        Attribute(
            "metadata",
            "string: a JSON object (`using_metadata`, LangChain's run metadata)",
            "`metadata`, merged key by key (not an object: kept raw under "
            '`metadata._invalid["metadata"]`)',
        ),
        Attribute("embedding.model_name", "string", "`metadata.embedding_model`"),
        Attribute(
            "tag.tags",
            "array of strings (or one string; `using_tags`)",
            'a tag `<t>` = `"true"` per string',
        ),
    ),
)
"""What this convention reads (the connect-your-app page is generated from it)."""


class OpenInference:
    """The OpenInference semantic conventions."""

    name = "openinference"

    def detect(self, span: Span) -> bool:
        return KIND in span.attrs

    def read(self, span: Span, issues: FieldIssues) -> Fields:
        attrs = span.attrs
        kind = str(attrs.get(KIND) or "").upper()
        out: Fields = {"kind": kind} if kind else {}
        question = _input_text(attrs, kind, span.max_depth)
        if question is not None:
            out["input"] = question
        answer = _output_text(attrs, kind, span.max_depth)
        if answer is not None:
            out["output"] = answer
        docs = _documents(span, DOCUMENTS, issues)
        if docs:
            out["docs"] = docs
        reranked = _documents(span, RERANKED, issues)
        if reranked:
            out["reranked"] = reranked
        for key, name in (
            ("session_id", "session.id"),
            ("user_id", "user.id"),
            ("model", "llm.model_name"),
        ):
            value = base.first_str(attrs, (name,))
            if value is not None:
                out[key] = value
        usage = _usage(attrs, kind)
        if usage:
            out["usage"] = usage
        metadata = attrs.get("metadata")
        if metadata is not None:
            parsed = None
            if isinstance(metadata, str):
                parsed = base.json_object(metadata, span.max_depth)
            if parsed is not None:
                out["metadata"] = parsed
            else:
                issues.keep("metadata", base.as_text(metadata))
        embedding_model = base.first_str(attrs, ("embedding.model_name",))
        if embedding_model is not None:
            out["metadata"] = {"embedding_model": embedding_model, **out.get("metadata", {})}
        tags = _tags(attrs.get("tag.tags"))
        if tags:
            out["tags"] = tags
        return out


def _usage(attrs: Mapping[str, Any], kind: str) -> dict[str, int]:
    """`llm.token_count.*`; an EMBEDDING span's tokens (the OpenAI instrumentor counts an
    embedding call's input as `prompt`) are `embedding_tokens`, not the answer's prompt."""
    prompt = base.count(attrs, "llm.token_count.prompt")
    total = base.count(attrs, "llm.token_count.total")
    if kind == base.EMBEDDING:
        tokens = total if total is not None else prompt
        return {"embedding_tokens": tokens} if tokens is not None else {}
    return base.usage(prompt, base.count(attrs, "llm.token_count.completion"), total)


def _tags(value: Any) -> dict[str, str]:
    """`tag.tags` (a string list; a single string is one tag) as flag tags."""
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list | tuple):
        return {}
    return {name: "true" for name in names if isinstance(name, str) and name}


def _messages(attrs: Mapping[str, Any], prefix: str) -> list[tuple[str, str]]:
    """(role, text) of `{prefix}{i}.message.*` in order; the text is `message.content`, else
    the joined text parts `message.contents.{j}.message_content.{type,text}` (a message
    sent as content parts)."""
    out = []
    for i in base.indexes(attrs, prefix):
        at = f"{prefix}{i}.message."
        content = _text(attrs.get(at + "content"))
        if content is None:
            parts = f"{at}contents."
            texts = [
                _text(attrs.get(f"{parts}{j}.message_content.text"))
                for j in base.indexes(attrs, parts)
                if attrs.get(f"{parts}{j}.message_content.type", "text") == "text"
            ]
            content = "".join(t for t in texts if t is not None) or None
        if content is not None:
            out.append((str(attrs.get(at + "role") or ""), content))
    return out


def _text(value: Any) -> str | None:
    """A string attribute that holds content (not the redaction marker)."""
    return value if isinstance(value, str) and value != REDACTED else None


def _input_text(attrs: Mapping[str, Any], kind: str, depth: int) -> str | None:
    if kind == base.LLM:
        users = [c for role, c in _messages(attrs, INPUT_MESSAGES) if role == "user"]
        if users:
            return users[-1]
        prompts = attrs.get("llm.prompts")
        if isinstance(prompts, list | tuple) and prompts and _text(prompts[-1]) is not None:
            return str(prompts[-1])
    value = _text(attrs.get("input.value"))
    if value is not None:
        return io_values.question(value, attrs.get("input.mime_type"), depth)
    return None


def _output_text(attrs: Mapping[str, Any], kind: str, depth: int) -> str | None:
    if kind == base.LLM:
        replies = [c for role, c in _messages(attrs, OUTPUT_MESSAGES) if role != "user"]
        if replies:
            return replies[0]
    value = _text(attrs.get("output.value"))
    if value is not None:
        return io_values.answer(value, attrs.get("output.mime_type"), depth)
    return None


def _documents(span: Span, prefix: str, issues: FieldIssues) -> list[dict[str, Any]]:
    """`{prefix}{i}.document.{id,content,score,metadata}` in index order."""
    attrs = span.attrs
    docs = []
    for i in base.indexes(attrs, prefix):
        at = f"{prefix}{i}.document."
        meta = attrs.get(at + "metadata")
        meta_obj = base.json_object(meta, span.max_depth) if isinstance(meta, str) else None
        meta_obj = meta_obj or {}
        doc: dict[str, Any] = {}
        doc_id = attrs.get(at + "id")
        if doc_id is None:
            doc_id = next((meta_obj[k] for k in ("id", "doc_id") if k in meta_obj), None)
        if doc_id is not None and not isinstance(doc_id, bool | dict | list):
            doc["id"] = str(doc_id)
        content = _text(attrs.get(at + "content"))
        if content is not None:
            doc["text"] = content
        raw_score = attrs.get(at + "score")
        if raw_score is None:
            raw_score = meta_obj.get("score")
        value = base.score(raw_score, f"contexts[{i}].score", issues)
        if value is not None:
            doc["score"] = value
        url = meta_obj.get("url")
        if not isinstance(url, str):
            source = meta_obj.get("source")
            url = source if isinstance(source, str) and source.startswith(_WEB) else None
        if url is not None:
            doc["url"] = url
        docs.append(doc)
    return docs
