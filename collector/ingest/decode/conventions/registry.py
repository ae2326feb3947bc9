"""The conventions, in precedence order: where a span carries several at once, the first to
give a field wins (tags and metadata merge key by key, the earlier again winning).

1. `ragpulse` — the app's own explicit attributes say what it means.
2. `openinference` — the richest RAG vocabulary (ranked documents with ids and scores);
   OpenInference can mirror GenAI attributes (`OPENINFERENCE_ENABLE_GENAI_SEMCONV`), which
   then only fill what it left out.
3. `openllmetry` — Traceloop's spans carry `gen_ai.*` too, but their own attributes say
   more: the stage of spans whose `gen_ai.operation.name` is OpenLLMetry's own
   (`execute_task`, `vector_db_retrieve`) or misleading (a LangChain workflow is
   `invoke_agent`), an older LLM span's flattened prompt, the retriever's documents; it
   reads none of the GenAI fields `genai` reads (messages, model, usage, conversation
   id), so `genai` still gives those.
4. `genai` — the OTel GenAI conventions, the common ground every family is moving to.
"""

from __future__ import annotations

from typing import Final

from collector.ingest.decode.conventions import genai, openinference, openllmetry, plain
from collector.ingest.decode.conventions.attributes import Declared
from collector.ingest.decode.conventions.base import Convention, Span
from collector.ingest.decode.conventions.genai import GenAI
from collector.ingest.decode.conventions.openinference import OpenInference
from collector.ingest.decode.conventions.openllmetry import OpenLLMetry
from collector.ingest.decode.conventions.plain import Plain

CONVENTIONS: Final[dict[str, Convention]] = {
    c.name: c for c in (Plain(), OpenInference(), OpenLLMetry(), GenAI())
}
"""Name -> convention, in precedence order."""
DECLARED: Final[dict[str, Declared]] = {
    d.name: d
    for d in (plain.DECLARED, openinference.DECLARED, openllmetry.DECLARED, genai.DECLARED)
}
"""Name -> what the convention reads (its module's `DECLARED`), in precedence order."""


def detect(span: Span) -> list[Convention]:
    """The conventions this span carries, in precedence order."""
    return [c for c in CONVENTIONS.values() if c.detect(span)]


def convention(name: str) -> Convention:
    """One convention by name; `ValueError` listing the known ones."""
    try:
        return CONVENTIONS[name]
    except KeyError:
        raise ValueError(f"unknown convention {name!r}; known: {', '.join(CONVENTIONS)}") from None
