"""Retrieved documents in the span events of OpenLLMetry's vector-DB instrumentors.

One event per result, named and keyed as OpenLLMetry's `EventAttributes` (package
opentelemetry-semantic-conventions-ai):
`db.query.result` with `db.query.result.{id,score,distance,metadata,document,vector}`
(opentelemetry-instrumentation-chromadb: id, distance, metadata as JSON, document;
-pinecone: id, score, metadata as Python `str()`, vector), and `db.search.result` with
`db.search.result.{id,score,distance,entity}` and `db.search.query.id` (-milvus' search).

Read: the id, the document's text, the score, and the `url` (or an id the event lacks)
of a metadata JSON object. A distance is no score (nearer is lower, on a scale the
collection's space decides), so it is left unread, as are vectors and Milvus' entity (a
Python `str()`, not JSON). Events that give none of these (Marqo's and Milvus' query
events carry the raw hit under the application's own field names) add no document.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from collector.ingest.decode.conventions import base
from collector.ingest.decode.conventions.attributes import Attribute, event
from collector.ingest.decode.conventions.base import Event
from collector.ingest.decode.optional import FieldIssues

RESULT_EVENTS: Final = {
    "db.query.result": "db.query.result.",
    "db.search.result": "db.search.result.",
}
"""Result event name -> its attributes' prefix."""

ATTRIBUTES: Final = tuple(
    attribute
    for name, prefix in RESULT_EVENTS.items()
    for attribute in (
        Attribute(
            prefix + "id",
            "string or int",
            "`contexts[i].id` (one event per result, in order)",
            on=event(name),
        ),
        Attribute(prefix + "document", "string", "`contexts[i].text`", on=event(name)),
        Attribute(
            prefix + "score",
            "number (a distance is no score: not read)",
            "`contexts[i].score`",
            on=event(name),
        ),
        Attribute(
            prefix + "metadata",
            "string: a JSON object; its `url`, and `id` / `doc_id` when the event has no id",
            "`contexts[i].url` (and id)",
            on=event(name),
        ),
    )
)
"""The result events' attributes read (span events, not span attributes)."""


def has_results(events: Sequence[Event]) -> bool:
    """Whether these span events include retrieval results."""
    return any(name in RESULT_EVENTS for name, _ in events)


def documents(events: Sequence[Event], issues: FieldIssues, max_depth: int) -> list[dict[str, Any]]:
    """The results' documents ({id, text, score, url}), in event order."""
    out: list[dict[str, Any]] = []
    for name, attrs in events:
        prefix = RESULT_EVENTS.get(name)
        if prefix is None:
            continue
        raw_meta = attrs.get(prefix + "metadata")
        meta = base.json_object(raw_meta, max_depth) if isinstance(raw_meta, str) else None
        meta = meta or {}
        doc: dict[str, Any] = {}
        doc_id = attrs.get(prefix + "id")
        if doc_id is None:
            doc_id = next((meta[k] for k in ("id", "doc_id") if meta.get(k) is not None), None)
        if isinstance(doc_id, str | int) and not isinstance(doc_id, bool):
            doc["id"] = str(doc_id)
        text = attrs.get(prefix + "document")
        if isinstance(text, str):
            doc["text"] = text
        score = base.score(attrs.get(prefix + "score"), f"contexts[{len(out)}].score", issues)
        if score is not None:
            doc["score"] = score
        if isinstance(meta.get("url"), str):
            doc["url"] = meta["url"]
        if doc:
            out.append(doc)
    return out
