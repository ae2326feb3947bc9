"""Traces that are no user request: index building, batch embedding, text splitting,
health checks. They are stored (their spans must be kept: a later fragment may still make
them a request) but flagged `traces.not_request` with the reason, never sampled nor
evaluated, and counted on /metrics (`ragpulse_traces_not_request_total{reason}`).

Decided from the span summaries alone (`otlp_mapping.summarize_span`), whatever the
convention. A trace is a request when any of its spans is

- an LLM call, a retrieval, a reranking or an agent run (stage kinds LLM, RETRIEVER,
  RERANKER, AGENT): someone asked a model or looked documents up, or the details of a
  model call sent as a log record (`otlp_details`, GenAI's inference operation details), or
- a span with a question and no stage kind: the app's own attributes say it is one, or
- a root CHAIN span (or one without a stage kind) with a text question and an answer: an
  app that instruments its handler alone (OpenInference's `@tracer.chain`). A question
  that is a JSON object or array is a framework's call arguments, not a user's question
  (LlamaIndex's node parser is a root CHAIN with `{"nodes": [...]}`).

Otherwise it is not a request, for one of these reasons:

- `embedding`: embedding work only (an index being built, a batch of texts embedded);
- `agent_setup`: an agent being built and nothing else asked of a model (GenAI's and
  OpenLLMetry's `create_agent` span, e.g. at the app's start);
- `no_model_call`: spans of a known convention but no model call nor retrieval (a text
  splitter, a tool or a chain run alone);
- `unknown_spans`: no span of any known convention (an HTTP health check, a framework's
  own spans).

More spans can only add evidence of a request, so a trace once a request stays one, and one
that is not may become one when the rest of its spans arrive (a query's embedding span
comes before its retriever's when a trace is split over messages). `settled` is the verdict
to count: the reason once the trace's root span is stored (the root ends last, so the rest
of a trace has normally arrived with or before it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from collector.ingest.decode.conventions.base import (
    AGENT,
    AGENT_SETUP,
    CHAIN,
    EMBEDDING,
    LLM,
    RERANKER,
    RETRIEVER,
    json_value,
)

REQUEST_KINDS: Final = frozenset({LLM, RETRIEVER, RERANKER, AGENT})
"""Stage kinds that make a trace a user request."""

EMBEDDING_ONLY: Final = "embedding"
AGENT_SETUP_ONLY: Final = "agent_setup"
NO_MODEL_CALL: Final = "no_model_call"
UNKNOWN_SPANS: Final = "unknown_spans"
REASONS: Final = (EMBEDDING_ONLY, AGENT_SETUP_ONLY, NO_MODEL_CALL, UNKNOWN_SPANS)
SURELY_NOT: Final = frozenset({EMBEDDING_ONLY, AGENT_SETUP_ONLY})
"""Reasons that are surely no request (no request's content capture switched off): such
traces are counted apart, never as incomplete (`otlp_store`)."""
"""Why a trace is not a request (the `reason` label, the `traces.not_request` value)."""


def not_request(spans: Iterable[Mapping[str, Any]]) -> str | None:
    """Why these span summaries make no user request, or None when they make one."""
    embedding = setup = known = False
    for span in spans:
        kind = span.get("kind", "")
        if kind in REQUEST_KINDS or (not kind and "input" in span) or _answered_root(span):
            return None
        if span.get("of"):  # an inference's details (`otlp_details`): a model was called
            return None
        embedding = embedding or kind == EMBEDDING
        setup = setup or kind == AGENT_SETUP
        known = known or bool(kind) or bool(span.get("conv"))
    if embedding:
        return EMBEDDING_ONLY
    if setup:
        return AGENT_SETUP_ONLY
    return NO_MODEL_CALL if known else UNKNOWN_SPANS


def _answered_root(span: Mapping[str, Any]) -> bool:
    """A root CHAIN (or kind-less) span with a text question and an answer."""
    if span.get("parent") or span.get("kind", "") not in ("", CHAIN):
        return False
    question = span.get("input")
    return (
        isinstance(question, str)
        and bool(question)
        and "output" in span
        and not _structured(question)
    )


def _structured(text: str) -> bool:
    """A JSON object or array (call arguments), not a sentence that starts with a bracket."""
    return text.lstrip().startswith(("{", "[")) and isinstance(json_value(text), dict | list)


def settled(spans: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The reason a trace whose root span is stored is not a request (None: it is one, or
    its root has not arrived yet)."""
    if not any(not s.get("parent") for s in spans.values()):
        return None
    return not_request(spans.values())
