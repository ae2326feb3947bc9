"""Knowledge gaps: the topics the corpus fails most, ranked for the content team (issue 41).

A trace fails a signal when what it measured says the corpus did not give the answer:

    retrieval_empty_rate  the retrieval returned nothing                     (1 = empty)
    hit_rate@5            no relevant document in the top 5, where ground truth is known
    context_relevance     the judge's context relevance below FAIL_BELOW      (judged traces)
    faithfulness          the judge's faithfulness below FAIL_BELOW            (judged traces)
    no_answer_rate        the answer says it does not know (`no_answer.says_no_answer`)
    turn_re_asked         the user asked it again in other words in the session (1 = re-asked)

Per topic and signal: a rate (`proportion`) with its Wilson 95% interval, or a mean with
its Student t 95% interval (mean ± t_{0.975, n-1} · s / sqrt(n)), over the topic's traces
that measured it.

The ranking. `measured` traces of the topic measured at least one signal, `failed` of
them failed at least one; the topic's failure rate f = failed / measured has the Wilson
interval [f_lo, f_hi]. The topics are ranked by

    score = volume · f_lo

the failed traces the topic has in the window at the least (95%): the expected failed
traces (volume · f) made conservative, so the biggest problems come first while a topic
whose two traces both failed does not outrank one with 40 failures of 200. Ties: the
higher failure rate, then the lower id.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from evaluators.aggregate import t_interval, wilson_interval

FAIL_BELOW = 0.5
"""A judge score (context relevance, faithfulness; 0..1) below this fails the trace."""
EXAMPLES = 3
"""Example questions kept per topic: of failed traces first."""


@dataclass(frozen=True)
class Signal:
    """A per-trace signal of the gap list: its metric, whether it is a 0/1 rate, and the
    direction in which it is good (a trace fails on the bad side of `FAIL_BELOW`)."""

    name: str
    proportion: bool
    direction: str
    meaning: str

    def fails(self, value: float) -> bool:
        return value < FAIL_BELOW if self.direction == "higher" else value >= FAIL_BELOW


SIGNALS: dict[str, Signal] = {
    s.name: s
    for s in (
        Signal("retrieval_empty_rate", True, "lower", "retrieval returned nothing"),
        Signal("hit_rate@5", True, "higher", "a relevant document in the top 5"),
        Signal("context_relevance", False, "higher", "judged relevance of the contexts"),
        Signal("faithfulness", False, "higher", "judged faithfulness of the answer"),
        Signal("no_answer_rate", True, "lower", "the answer says it does not know"),
        Signal("turn_re_asked", True, "lower", "the user asked again in other words"),
    )
}


@dataclass(frozen=True)
class Estimate:
    """One signal of one topic: value, its 95% interval and the traces behind it."""

    signal: str
    n: int
    value: float
    lower: float
    upper: float
    failed: int


@dataclass(frozen=True)
class Gap:
    """One topic's place in the gap list (module docstring)."""

    topic: int
    volume: int
    measured: int
    failed: int
    failure_rate: float
    lower: float
    upper: float
    score: float
    """volume x lower: the failed traces the topic has at the least."""
    signals: Mapping[str, Estimate]
    examples: tuple[str, ...]

    @property
    def expected_failed(self) -> float:
        """volume x failure rate."""
        return self.volume * self.failure_rate


@dataclass
class _Sums:
    n: int = 0
    total: float = 0.0
    squares: float = 0.0
    failed: int = 0


@dataclass
class _Topic:
    volume: int = 0
    measured: int = 0
    failed: int = 0
    signals: dict[str, _Sums] = field(default_factory=dict)
    failed_examples: list[str] = field(default_factory=list)
    other_examples: list[str] = field(default_factory=list)


class GapTally:
    """Adds traces up per topic (memory: topics x signals, and `EXAMPLES` questions each),
    then ranks them (`gaps`)."""

    def __init__(self, examples: int = EXAMPLES) -> None:
        self.examples = examples
        self._topics: dict[int, _Topic] = {}

    def add(self, topic: int, values: Mapping[str, float], question: str | None = None) -> None:
        """One trace of `topic` with the values it measured (signal -> value; other keys
        and non-finite values are ignored)."""
        into = self._topics.setdefault(topic, _Topic())
        into.volume += 1
        failed = measured = False
        for name, value in values.items():
            signal = SIGNALS.get(name)
            if signal is None or not math.isfinite(value):
                continue
            sums = into.signals.setdefault(name, _Sums())
            sums.n += 1
            sums.total += value
            sums.squares += value * value
            measured = True
            if signal.fails(value):
                sums.failed += 1
                failed = True
        into.measured += measured
        into.failed += failed
        if question:
            kept = into.failed_examples if failed else into.other_examples
            if len(kept) < self.examples and question not in kept:
                kept.append(question)

    def gaps(self) -> list[Gap]:
        """The topics that measured anything, ranked by `score` (module docstring)."""
        out = [_gap(topic, t, self.examples) for topic, t in self._topics.items() if t.measured]
        out.sort(key=lambda g: (-g.score, -g.failure_rate, g.topic))
        return out


def _estimate(name: str, sums: _Sums) -> Estimate:
    value = sums.total / sums.n
    if SIGNALS[name].proportion:
        lower, upper = wilson_interval(min(max(round(sums.total), 0), sums.n), sums.n)
    else:
        lower, upper = t_interval(sums.n, sums.total, sums.squares)
    return Estimate(name, sums.n, value, lower, upper, sums.failed)


def _gap(topic: int, t: _Topic, examples: int) -> Gap:
    rate = t.failed / t.measured
    lower, upper = wilson_interval(t.failed, t.measured)
    shown = (t.failed_examples + [q for q in t.other_examples if q not in t.failed_examples])[
        :examples
    ]
    return Gap(
        topic=topic,
        volume=t.volume,
        measured=t.measured,
        failed=t.failed,
        failure_rate=rate,
        lower=lower,
        upper=upper,
        score=t.volume * lower,
        signals=MappingProxyType(
            {name: _estimate(name, s) for name, s in sorted(t.signals.items()) if s.n}
        ),
        examples=tuple(shown),
    )


def rank_gaps(
    traces: Iterable[tuple[int, Mapping[str, float], str | None]], examples: int = EXAMPLES
) -> list[Gap]:
    """The gap list of (topic, signal values, question) per trace, in one pass."""
    tally = GapTally(examples)
    for topic, values, question in traces:
        tally.add(topic, values, question)
    return tally.gaps()


def signal_names() -> Sequence[str]:
    """The signals, in the order of the list's columns."""
    return tuple(SIGNALS)
