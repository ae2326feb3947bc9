"""Whether the asked metrics can run on a dataset: the trace fields a metric's `needs`
text names, and those that no sample of the dataset has (the metric could only skip)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from evaluators.registry import ResolvedMetric
from evaluators.sample import Sample

_PRESENT: dict[str, Callable[[Sample], bool]] = {
    "question": lambda s: bool(s.question),
    "answer": lambda s: bool(s.answer),
    "reference": lambda s: bool(s.reference),
    "contexts": lambda s: bool(s.contexts),
    "contexts[].text": lambda s: any(c.text for c in s.contexts),
    "relevant_ids/relevance": lambda s: bool(s.relevance),
    "judge.decision": lambda s: s.judge is not None and s.judge.decision is not None,
    "judge_label": lambda s: s.judge_label is not None,
    "judge.latency_ms": lambda s: s.judge is not None and s.judge.latency_ms is not None,
    "cache.hit": lambda s: s.cache_hit is not None,
    "timestamp": lambda s: s.timestamp is not None,
    "session_id": lambda s: s.session_id is not None,
}

# Words of a metric's `needs` text -> trace field; words not listed (a judge model, an
# embedder) are not fields of the data.
_TERMS: dict[str, str] = {
    "question": "question",
    "questions": "question",
    "answer": "answer",
    "answers": "answer",
    "reference": "reference",
    "contexts": "contexts",
    "ranked contexts": "contexts",
    "contexts with text": "contexts[].text",
    "ground truth": "relevant_ids/relevance",
    "judge.decision": "judge.decision",
    "`judge.decision`": "judge.decision",
    "judge_label": "judge_label",
    "`judge_label`": "judge_label",
    "judge.latency_ms": "judge.latency_ms",
    "cache.hit": "cache.hit",
    "timestamp": "timestamp",
    "timestamps": "timestamp",
    "session_id": "session_id",
    "sessions": "session_id",
}


def required_fields(needs: str) -> list[list[str]]:
    """Parse a metric's `needs` text into fields; each inner list is "any of" (`a or b`)."""
    text = re.sub(r"\([^)]*\)", "", needs)
    out: list[list[str]] = []
    for term in re.split(r"[,+]", text):
        options = [_TERMS.get(o.strip().lower()) for o in term.split(" or ")]
        known = [o for o in options if o is not None]
        if known and len(known) == len(options):
            out.append(known)
    return out


def missing_fields(metric: ResolvedMetric, samples: Sequence[Sample]) -> list[str]:
    """Fields the metric needs that no sample has (the metric could only skip)."""
    missing = []
    for options in required_fields(metric.spec.needs):
        if not any(_PRESENT[f](s) for f in options for s in samples):
            missing.append(" or ".join(options))
    return missing
