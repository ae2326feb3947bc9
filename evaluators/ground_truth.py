"""Which documents answer a question: the ground truth of the retrieval metrics and Tier 0.

A trace can carry ground truth three ways, tried in a configurable priority (the first
one present wins, default `DEFAULT_PRIORITY`):

- `relevance`: graded, document key -> grade (0 = judged not relevant);
- `relevant_ids`: the relevant document keys (grade 1), possibly sent later by feedback;
- `shown_url`: the url(s) of the document(s) the production system showed the user in the
  real dialog (seed 004 §7.3, "Real-Users Benchmark"): a proxy label, the document was
  judged relevant enough to show. It is compared per *document*: each retrieved context
  is keyed by its url (its id only when it has no url), so several chunks of the shown
  page count once, at the best rank, and a page is matched whatever chunk ids the
  retriever uses. Its limits (seed 004 §7.3): traces without a url (NULLs) have no ground
  truth; a url may be incomplete or stale (moved pages never match); it says nothing of
  whether the answer was complete; and it rewards agreeing with what production showed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

from evaluators.sample import Context

RELEVANCE: Final = "relevance"
RELEVANT_IDS: Final = "relevant_ids"
SHOWN_URL: Final = "shown_url"
SOURCES: Final = (RELEVANCE, RELEVANT_IDS, SHOWN_URL)
DEFAULT_PRIORITY: Final = SOURCES


def check_priority(priority: Sequence[str]) -> tuple[str, ...]:
    """The priority as a tuple; ValueError naming the known sources for an unknown one."""
    unknown = [p for p in priority if p not in SOURCES]
    if unknown:
        raise ValueError(
            f"unknown ground-truth source(s) {', '.join(unknown)}; known: {', '.join(SOURCES)}"
        )
    return tuple(priority)


def source_of(
    priority: Sequence[str],
    relevance: Mapping[str, Any] | None,
    relevant_ids: Iterable[Any] | None,
    shown_urls: Sequence[str] | None,
) -> str | None:
    """The first source in `priority` that this trace has, or None."""
    present = {
        RELEVANCE: relevance is not None,
        RELEVANT_IDS: relevant_ids is not None,
        SHOWN_URL: bool(shown_urls),
    }
    return next((s for s in priority if present[s]), None)


def resolve(
    priority: Sequence[str],
    relevance: Mapping[str, Any] | None,
    relevant_ids: Iterable[Any] | None,
    shown_urls: Sequence[str] | None,
    contexts: tuple[Context, ...],
) -> tuple[Mapping[str, int] | None, tuple[Context, ...], str | None]:
    """(relevance for the `Sample`, its contexts, the source used).

    With `shown_url` as the source the contexts are keyed by url (see module docstring).
    """
    source = source_of(priority, relevance, relevant_ids, shown_urls)
    if source == RELEVANCE and relevance is not None:
        return MappingProxyType({str(k): int(v) for k, v in relevance.items()}), contexts, source
    if source == RELEVANT_IDS and relevant_ids is not None:
        return MappingProxyType({str(k): 1 for k in relevant_ids}), contexts, source
    if source == SHOWN_URL and shown_urls:
        by_url = tuple(
            Context(url=c.url, text=c.text, score=c.score) if c.url is not None else c
            for c in contexts
        )
        return MappingProxyType(dict.fromkeys(shown_urls, 1)), by_url, source
    return None, contexts, None
