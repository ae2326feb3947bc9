"""What a convention is: a detector and a reader of one span's attributes.

A convention reads a `Span` (attributes, name, instrumentation scope, events) into
`Fields`, a plain dict holding any of `FIELD_KEYS`; `otlp_mapping.summarize_span` merges the
fields of every convention detected on a span in precedence order (the first to give a key
wins). Readers never raise on a value of an unexpected shape: they skip it, or hand it to
`FieldIssues` when the value is one the trace contract knows (it is then kept raw).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

import orjson

from collector.ingest.decode.limits import DEFAULT_MAX_DEPTH, depth_within
from collector.ingest.decode.optional import FieldIssues

# Stage kinds: the span kinds the trace record understands (OpenInference's names, which
# every convention maps its own onto).
CHAIN: Final = "CHAIN"
AGENT: Final = "AGENT"
LLM: Final = "LLM"
RETRIEVER: Final = "RETRIEVER"
RERANKER: Final = "RERANKER"
EMBEDDING: Final = "EMBEDDING"
TOOL: Final = "TOOL"
AGENT_SETUP: Final = "AGENT_SETUP"
"""Building an agent (GenAI's `create_agent`): no stage of a request, no request alone."""

FIELD_KEYS: Final = (
    "kind",  # a stage kind above
    "input",  # the question (root/chain) or the prompt's last user message (LLM)
    "output",  # the answer (root/chain) or the reply (LLM)
    "docs",  # retrieved documents: [{"id"?, "text"?, "score"?, "url"?}]
    "reranked",  # the reranker's output documents, same shape
    "session_id",
    "user_id",
    "model",
    "usage",  # {"prompt_tokens", "completion_tokens", "total_tokens"}
    "metadata",  # a JSON object
    "tags",  # name -> str | int | float
    "shown_url",  # [url]: the documents shown to the user
)
"""The keys a convention's reader may return."""

Fields = dict[str, Any]
Event = tuple[str, Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class Span:
    """One span as a convention sees it."""

    attrs: Mapping[str, Any]
    name: str = ""
    scope: str = ""
    """The instrumentation scope's name (e.g. `openinference.instrumentation.langchain`)."""
    events: Sequence[Event] = ()
    max_depth: int = DEFAULT_MAX_DEPTH


class Convention(Protocol):
    """One instrumentation family's mapping."""

    @property
    def name(self) -> str:
        """Its name, as counted on /metrics and shown by the inspect command."""
        ...

    def detect(self, span: Span) -> bool:
        """Whether this span carries this convention's attributes."""
        ...

    def read(self, span: Span, issues: FieldIssues) -> Fields:
        """The span's fields in this convention (only keys with a value)."""
        ...


class RecordingAttrs(Mapping[str, Any]):
    """Attributes that remember which keys were read (not merely listed): what the
    inspect command reports as used, and by difference as left unread."""

    __slots__ = ("_attrs", "used")

    def __init__(self, attrs: Mapping[str, Any], used: set[str]) -> None:
        self._attrs = attrs
        self.used = used

    def __getitem__(self, key: str) -> Any:
        value = self._attrs[key]
        self.used.add(key)
        return value

    def __contains__(self, key: object) -> bool:
        found = key in self._attrs
        if found and isinstance(key, str):
            self.used.add(key)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._attrs)

    def __len__(self) -> int:
        return len(self._attrs)


def first_str(attrs: Mapping[str, Any], names: Sequence[str]) -> str | None:
    """The first non-empty string among these attributes."""
    for name in names:
        value = attrs.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def count(attrs: Mapping[str, Any], *names: str) -> int | None:
    """The first integer (not a bool) among these attributes."""
    for name in names:
        value = attrs.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def usage(prompt: int | None, completion: int | None, total: int | None) -> dict[str, int]:
    """Token usage in the trace contract's names; the total is their sum when not given."""
    out = {}
    if prompt is not None:
        out["prompt_tokens"] = prompt
    if completion is not None:
        out["completion_tokens"] = completion
    if total is None and (prompt is not None or completion is not None):
        total = (prompt or 0) + (completion or 0)
    if total is not None:
        out["total_tokens"] = total
    return out


def json_value(text: str, max_depth: int = DEFAULT_MAX_DEPTH) -> Any:
    """Parsed JSON of at most `max_depth` levels, or None (no NaN, no RecursionError)."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return value if depth_within(value, max_depth) else None


def json_object(text: str, max_depth: int = DEFAULT_MAX_DEPTH) -> dict[str, Any] | None:
    """A JSON object of at most `max_depth` levels, or None."""
    value = json_value(text, max_depth)
    return value if isinstance(value, dict) else None


def as_text(value: Any) -> str:
    """A raw attribute value as text (it may hold NaN, which JSON cannot store)."""
    return value if isinstance(value, str) else repr(value)


def score(value: Any, path: str, issues: FieldIssues) -> float | None:
    """A finite number (not a bool) as float; a non-finite one is kept raw."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        if math.isfinite(value):
            return float(value)
        issues.keep(path, as_text(value))
    return None


def indexes(attrs: Mapping[str, Any], prefix: str) -> list[int]:
    """The sorted N of the `{prefix}{N}.…` attributes (flattened lists)."""
    found: set[int] = set()
    for key in attrs:
        if key.startswith(prefix):
            head = key[len(prefix) :].split(".", 1)[0]
            if head.isdigit():
                found.add(int(head))
    return sorted(found)
