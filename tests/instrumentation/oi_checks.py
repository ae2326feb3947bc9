"""What a stored trace must hold after an OpenInference-instrumented request, computed from
the app's own knowledge (what it asked, retrieved and answered) and from the spans the real
instrumentor emitted, never from ragpulse's mapping.

`Asked` is one request as the app saw it; `AppRun` the requests of a run with the spans they
produced. `check_stored` compares a stored row with both: the fields the app knows, the stage
latencies as the outermost spans of each stage kind add up (the app runs its stages one after
another, so that is their wall time), and everything the library put on a span (document
contents, ids, session, user, model, tags, metadata keys) found in the row.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from collector.store.models import Trace
from tests.instrumentation.harness import Capture

KIND = "openinference.span.kind"
STAGES = {
    "RETRIEVER": "retrieval",
    "RERANKER": "rerank",
    "EMBEDDING": "embedding",
    "LLM": "generation",
}


@dataclass
class Asked:
    """One request as the app made it."""

    question: str
    answer: str
    contexts: list[dict[str, Any]]
    session_id: str | None = None
    user_id: str | None = None
    model: str | None = None
    usage: dict[str, int] | None = None
    tags: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    trace_id: str = ""
    spans: list[ReadableSpan] = field(default_factory=list)


@dataclass
class AppRun:
    """The requests of one run of an app, and every span the instrumentor finished."""

    capture: Capture
    asked: list[Asked] = field(default_factory=list)
    others: list[list[ReadableSpan]] = field(default_factory=list)
    """Traces that are no request (e.g. building the index), each a list of spans."""

    @contextmanager
    def request(self, asked: Asked) -> Iterator[Asked]:
        """The spans finished inside the block are this request's (one trace)."""
        before = len(self.capture.spans)
        yield asked
        asked.spans = self.capture.spans[before:]
        (asked.trace_id,) = {f"{s.context.trace_id:032x}" for s in asked.spans}
        self.asked.append(asked)

    @contextmanager
    def other(self) -> Iterator[None]:
        before = len(self.capture.spans)
        yield
        self.others.append(self.capture.spans[before:])

    @property
    def spans(self) -> list[ReadableSpan]:
        return self.capture.spans


def outermost_ms(spans: Sequence[ReadableSpan], kind: str) -> float:
    """The summed durations (ms) of the spans of `kind` that have no ancestor of `kind`
    (a nested span's time is inside its ancestor's), below the root."""
    by_id = {s.context.span_id: s for s in spans}

    def nested(span: ReadableSpan) -> bool:
        parent = span.parent.span_id if span.parent else None
        while parent in by_id:
            above = by_id[parent]
            if _kind(above) == kind:
                return True
            parent = above.parent.span_id if above.parent else None
        return False

    return (
        sum(
            (s.end_time or 0) - (s.start_time or 0)
            for s in spans
            if _kind(s) == kind and s.parent is not None and not nested(s)
        )
        / 1e6
    )


def _kind(span: ReadableSpan) -> str:
    return str((span.attributes or {}).get(KIND, ""))


def _attrs(spans: Sequence[ReadableSpan]) -> Iterator[tuple[str, Any]]:
    for span in spans:
        yield from (span.attributes or {}).items()


def check_stored(row: Trace, asked: Asked) -> None:
    """The stored row holds the request as the app made it, and all the library emitted."""
    assert row.not_request is None
    assert row.question == asked.question
    assert row.answer == asked.answer
    assert (row.contexts or []) == asked.contexts
    assert (row.session_id, row.user_id) == (asked.session_id, asked.user_id)
    assert row.model == asked.model
    assert row.usage == asked.usage
    assert (row.tags or {}).items() >= asked.tags.items()
    assert (row.meta or {}).items() >= asked.metadata.items()
    root = next(s for s in asked.spans if s.parent is None)
    assert row.latency_ms == pytest.approx(((root.end_time or 0) - (root.start_time or 0)) / 1e6)
    stages = {
        STAGES[k]: outermost_ms(asked.spans, k)
        for k in STAGES
        if any(_kind(s) == k for s in asked.spans if s.parent is not None)
    }
    assert (row.latency_stages or {}) == pytest.approx(stages, rel=1e-9)
    check_nothing_left_behind(row, asked.spans)


def check_nothing_left_behind(row: Trace, spans: Sequence[ReadableSpan]) -> None:
    """Every document, id, session, user, model (LLM and embedding), tag and metadata key on
    any span is in the row."""
    texts = {c.get("text") for c in row.contexts or ()}
    ids = {c.get("id") for c in row.contexts or ()}
    scored = [c for c in row.contexts or () if "score" in c]
    for key, value in _attrs(spans):
        if key.startswith("retrieval.documents."):
            if key.endswith(".document.content"):
                assert value in texts, key
            elif key.endswith(".document.id"):
                assert value in ids, key
            elif key.endswith(".document.score"):
                assert value in {c["score"] for c in scored}, key
            elif key.endswith(".document.metadata"):
                meta = json.loads(value)
                if "id" in meta:
                    assert str(meta["id"]) in ids, key
                if "score" in meta:
                    assert meta["score"] in {c["score"] for c in scored}, key
        elif key == "session.id":
            assert row.session_id == value
        elif key == "user.id":
            assert row.user_id == value
        elif key == "llm.model_name":
            assert row.model == value
        elif key == "embedding.model_name":
            assert (row.meta or {}).get("embedding_model") == value
        elif key == "tag.tags":
            assert all((row.tags or {}).get(t) == "true" for t in value)
        elif key == "metadata":
            assert set(json.loads(value)) <= set(row.meta or {}), value


def stored_by_request(stored: Mapping[str, Trace], run: AppRun) -> list[tuple[Trace, Asked]]:
    """Each request's stored row (all of them stored)."""
    missing = [a.question for a in run.asked if a.trace_id not in stored]
    assert not missing, missing
    return [(stored[a.trace_id], a) for a in run.asked]
