"""OpenInference (Arize Phoenix's instrumentors: LangChain, LlamaIndex, OpenAI, ...).

Every OpenInference span carries `openinference.span.kind` (CHAIN, AGENT, LLM, RETRIEVER,
RERANKER, EMBEDDING, TOOL, ...). Question and answer: `input.value` / `output.value` (a
JSON value under `question`/`query`/`input` and `answer`/`output`/`response` is unwrapped),
on LLM spans the last user message of `llm.input_messages` and the first reply of
`llm.output_messages`. Documents: `retrieval.documents.{i}.document.{id,content,score,metadata}`
(a reranker's output under `reranker.output_documents.`); an id or score missing there is
read from the document's `metadata` JSON (`id`/`doc_id`, `score`), where the LangChain
instrumentor puts them. `session.id`, `user.id`, `llm.model_name`, `llm.token_count.*`,
`metadata` (a JSON object).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from collector.ingest.decode.conventions import base
from collector.ingest.decode.conventions.base import Fields, Span
from collector.ingest.decode.optional import FieldIssues

KIND: Final = "openinference.span.kind"


class OpenInference:
    """The OpenInference semantic conventions."""

    name = "openinference"

    def detect(self, span: Span) -> bool:
        return KIND in span.attrs

    def read(self, span: Span, issues: FieldIssues) -> Fields:
        attrs = span.attrs
        kind = str(attrs.get(KIND) or "").upper()
        out: Fields = {"kind": kind} if kind else {}
        question = _input_text(attrs, kind)
        if question is not None:
            out["input"] = question
        answer = _output_text(attrs, kind)
        if answer is not None:
            out["output"] = answer
        docs = _documents(span, "retrieval.documents.", issues)
        if docs:
            out["docs"] = docs
        reranked = _documents(span, "reranker.output_documents.", issues)
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
        usage = base.usage(
            base.count(attrs, "llm.token_count.prompt"),
            base.count(attrs, "llm.token_count.completion"),
            base.count(attrs, "llm.token_count.total"),
        )
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
        return out


def _unwrap(text: str, mime: Any, keys: tuple[str, ...]) -> str:
    """A JSON `input.value`/`output.value` holding the text under a well-known key."""
    if mime == "application/json":
        obj = base.json_object(text)
        if obj is not None:
            for key in keys:
                if isinstance(obj.get(key), str):
                    return str(obj[key])
    return text


def _messages(attrs: Mapping[str, Any], prefix: str) -> list[tuple[str, str]]:
    out = []
    i = 0
    while f"{prefix}{i}.message.role" in attrs or f"{prefix}{i}.message.content" in attrs:
        role = attrs.get(f"{prefix}{i}.message.role")
        content = attrs.get(f"{prefix}{i}.message.content")
        if isinstance(content, str):
            out.append((str(role or ""), content))
        i += 1
    return out


def _input_text(attrs: Mapping[str, Any], kind: str) -> str | None:
    if kind == base.LLM:
        users = [c for role, c in _messages(attrs, "llm.input_messages.") if role == "user"]
        if users:
            return users[-1]
    value = attrs.get("input.value")
    if isinstance(value, str):
        return _unwrap(value, attrs.get("input.mime_type"), ("question", "query", "input"))
    return None


def _output_text(attrs: Mapping[str, Any], kind: str) -> str | None:
    if kind == base.LLM:
        replies = [c for role, c in _messages(attrs, "llm.output_messages.") if role != "user"]
        if replies:
            return replies[0]
    value = attrs.get("output.value")
    if isinstance(value, str):
        return _unwrap(value, attrs.get("output.mime_type"), ("answer", "output", "response"))
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
        content = attrs.get(at + "content")
        if isinstance(content, str):
            doc["text"] = content
        raw_score = attrs.get(at + "score")
        if raw_score is None:
            raw_score = meta_obj.get("score")
        value = base.score(raw_score, f"contexts[{i}].score", issues)
        if value is not None:
            doc["score"] = value
        url = meta_obj.get("url")
        if isinstance(url, str):
            doc["url"] = url
        docs.append(doc)
    return docs
