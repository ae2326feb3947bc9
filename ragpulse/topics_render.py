"""How `ragpulse topics` shows its numbers: a topic's JSON (volume, share, emerging, change
and the gap signals as `metrics`) and the knowledge-gap list, as JSON and as text."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, TextIO

from collector.jobs.queries.topic_overview import TopicRow
from evaluators.topics.gaps import SIGNALS, Estimate, Gap

LABEL_CHARS = 60
SHORT = {
    "retrieval_empty_rate": "empty",
    "hit_rate@5": "hit@5",
    "context_relevance": "ctx rel",
    "faithfulness": "faithful",
    "no_answer_rate": "no answer",
}
"""Column names of the signals in the text list."""


def _time(when: datetime) -> str:
    return when.isoformat()


def cut(label: str, chars: int = LABEL_CHARS) -> str:
    return label if len(label) <= chars else label[: chars - 1] + "…"


def estimate_json(e: Estimate) -> dict[str, Any]:
    return {
        "value": e.value,
        "ci_lower": e.lower,
        "ci_upper": e.upper,
        "n": e.n,
        "failed": e.failed,
        "direction": SIGNALS[e.signal].direction,
    }


def failure_json(gap: Gap) -> dict[str, Any]:
    return {
        "rate": gap.failure_rate,
        "ci_lower": gap.lower,
        "ci_upper": gap.upper,
        "failed": gap.failed,
        "measured": gap.measured,
        "score": gap.score,
        "expected_failed": gap.expected_failed,
    }


def topic_json(row: TopicRow, *, whole: bool) -> dict[str, Any]:
    """One topic: id, label, volume, share, emerging, change, metrics (the gap signals
    with their 95% intervals) and, `whole`, its examples and clustering."""
    topic, e, gap = row.topic, row.emergence, row.gap
    out: dict[str, Any] = {
        "id": topic.id,
        "label": topic.label,
        "name": topic.name.text if topic.name is not None else None,
        "keywords": {lang: list(words) for lang, words in topic.keywords.items()},
        "volume": row.volume,
        "share": row.share,
        "size": topic.size,
        "first_seen": _time(topic.first_seen),
        "last_seen": _time(topic.last_seen),
        "emerging": row.emerging,
        "change": e.change if e is not None else None,
        "emergence": None
        if e is None
        else {
            "new": e.new,
            "recent": e.recent,
            "baseline": e.baseline,
            "recent_share": e.recent_share,
            "baseline_share": e.baseline_share,
            "p_value": e.p_value,
            "p_adjusted": e.p_adjusted,
        },
        "metrics": {}
        if gap is None
        else {name: estimate_json(est) for name, est in gap.signals.items()},
        "failure": failure_json(gap) if gap is not None else None,
    }
    if whole:
        out |= {
            "active": topic.active,
            "examples": list(topic.examples),
            "model": topic.model,
            "method": topic.method,
            "params": dict(topic.params),
            "names": dict(topic.name.names) if topic.name is not None else None,
        }
    return out


def gap_json(gap: Gap, label: str, rank: int) -> dict[str, Any]:
    return {
        "rank": rank,
        "id": gap.topic,
        "label": label,
        "volume": gap.volume,
        "failure": failure_json(gap),
        "metrics": {name: estimate_json(e) for name, e in gap.signals.items()},
        "examples": list(gap.examples),
    }


def _pct(value: float) -> str:
    """A percentage: one decimal below 10% (a 0.4% upper bound is not 0%)."""
    return f"{value:.1%}" if 0 < value < 0.1 else f"{value:.0%}"


def signal_text(e: Estimate) -> str:
    if SIGNALS[e.signal].proportion:
        return f"{_pct(e.value)} [{_pct(e.lower)}, {_pct(e.upper)}] n={e.n}"
    return f"{e.value:.2f} [{e.lower:.2f}, {e.upper:.2f}] n={e.n}"


def print_gaps(
    gaps: list[Gap], labels: Mapping[int, str], since: datetime, until: datetime, out: TextIO
) -> None:
    """The gap list as text: one block per topic, the biggest surest failure first."""
    print(
        f"knowledge gaps, {since:%Y-%m-%d %H:%M} – {until:%Y-%m-%d %H:%M} UTC: topics by "
        "failed traces at the least (volume x lower 95% bound of the failure rate)",
        file=out,
    )
    if not gaps:
        print("  none: no topic has a measured trace in the window", file=out)
        return
    for rank, gap in enumerate(gaps, start=1):
        label = cut(labels.get(gap.topic, f"topic {gap.topic}"))
        print(
            f"{rank:>3d}. topic {gap.topic}: {label}\n"
            f"     {gap.volume} traces, {gap.failed} of {gap.measured} measured failed: "
            f"{_pct(gap.failure_rate)} [{_pct(gap.lower)}, {_pct(gap.upper)}], "
            f"at least {gap.score:.0f} failed traces",
            file=out,
        )
        for name, e in gap.signals.items():
            print(f"     {SHORT.get(name, name):>9s}: {signal_text(e)}", file=out)
        for question in gap.examples:
            print(f"       - {cut(' '.join(question.split()), 100)}", file=out)
