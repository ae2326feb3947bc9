"""The topics on `/metrics`: what users ask about, each kept topic's share, and whether
it is emerging (issue 41).

    ragpulse_topic_info{topic, label}      1: the topic's name (the LLM judge's when it
                                           named it, else its top keywords per language)
    ragpulse_topic_traces{topic}           traces of the recent window with the topic
    ragpulse_topic_share{topic}            their share of the window's traces
    ragpulse_topic_share_change{topic}     share minus its share in the baseline before
    ragpulse_topic_emerging{topic}         1 when its share rose beyond chance (or it is a
                                           new topic that took traffic), else 0

The recent window is `topics.emerging_window` (24h) ending at the refresh, the baseline
`topics.emerging_baseline` before it (`collector.jobs.queries.topic_traffic`). Cardinality
is bounded: the `topics.series` largest topics of the window get series of their own,
and so does every emerging topic (at most `topics.series` more, the largest: a new
intent at 3% is rarely among the largest yet, and must still reach its alert); the rest
fold into `topic="other"` (traces and share only). So at most 2 x `topics.series` + 1
values of `topic`.

The numbers come from two aggregate queries, run by `refresh` after the jobs (at most
every `every_s`), never by a scrape; a database error is logged and the last numbers are
kept. `RagpulseTopicEmerging` (`dashboards/prometheus/rules/topics.yml`) opens a ticket.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy.orm import Session

from collector.jobs.queries.topic_overview import Overview, TopicRow, overview
from collector.jobs.windows.labels import clean_value
from collector.settings import TopicSettings, parse_duration

logger = logging.getLogger(__name__)

OTHER = "other"


@dataclass(frozen=True)
class TopicPoint:
    """One `topic` label value's numbers."""

    topic: str
    label: str
    traces: int
    share: float | None
    change: float | None
    emerging: bool | None
    """None for `other`."""


def kept_points(seen: Overview, series: int) -> list[TopicPoint]:
    """The topics with series of their own, then `other` (module docstring)."""
    rows = list(seen.rows)  # largest first
    kept: list[TopicRow] = rows[:series]
    kept += [r for r in rows[series:] if r.emerging][:series]
    chosen = {r.topic.id for r in kept}
    out = [
        TopicPoint(
            topic=str(r.topic.id),
            label=clean_value(r.topic.title) or f"topic {r.topic.id}",
            traces=r.volume,
            share=r.share,
            change=r.emergence.change if r.emergence is not None else None,
            emerging=r.emerging,
        )
        for r in kept
    ]
    rest = [r for r in rows if r.topic.id not in chosen]
    if rest:
        traces = sum(r.volume for r in rest)
        out.append(
            TopicPoint(
                topic=OTHER,
                label=OTHER,
                traces=traces,
                share=traces / seen.traces if seen.traces else None,
                change=None,
                emerging=None,
            )
        )
    return out


class TopicSeries(Collector):
    """The kept topics' series, recomputed by `refresh` and read by scrapes."""

    def __init__(
        self,
        session_factory: Callable[[], Session],
        settings: TopicSettings,
        *,
        every_s: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._sessions = session_factory
        self._settings = settings
        self._window = timedelta(seconds=parse_duration(settings.emerging_window))
        self._every_s = every_s
        self._clock = clock
        self._lock = threading.Lock()
        self._points: list[TopicPoint] = []
        self._last = float("-inf")

    def refresh(self, *, force: bool = False) -> bool:
        """Recompute the numbers (at most every `every_s`); False when not due or the
        database failed (logged, the last numbers kept)."""
        now = self._clock()
        if not force and now - self._last < self._every_s:
            return False
        self._last = now
        until = datetime.fromtimestamp(now, UTC)
        try:
            with self._sessions() as session:
                seen = overview(session, self._settings, until - self._window, until)
        except Exception:
            logger.exception("could not read the topics for /metrics")
            return False
        self.publish(kept_points(seen, self._settings.series))
        return True

    def publish(self, points: Sequence[TopicPoint]) -> None:
        """Serve these points from now on (what `refresh` found)."""
        with self._lock:
            self._points = list(points)

    def current(self) -> Sequence[TopicPoint]:
        with self._lock:
            return tuple(self._points)

    def collect(self) -> Iterator[Metric]:
        window = self._settings.emerging_window
        info = GaugeMetricFamily(
            "ragpulse_topic_info",
            "1 per topic with series of its own (the topics.series largest and every "
            "emerging one; the rest is topic=other): its label, the LLM judge's name of it "
            "or else its top keywords per language",
            labels=["topic", "label"],
        )
        traces = GaugeMetricFamily(
            "ragpulse_topic_traces",
            f"Traces of the last topics.emerging_window ({window}) the topics job gave the topic",
            labels=["topic"],
        )
        share = GaugeMetricFamily(
            "ragpulse_topic_share",
            "The topic's share of the traces of the last topics.emerging_window with an "
            "embedding (those with no topic near included)",
            labels=["topic"],
        )
        change = GaugeMetricFamily(
            "ragpulse_topic_share_change",
            "The topic's share of the recent window minus its share of the "
            "topics.emerging_baseline before it",
            labels=["topic"],
        )
        emerging = GaugeMetricFamily(
            "ragpulse_topic_emerging",
            "1 when the topic's share rose beyond chance against the baseline (Fisher's "
            "exact test, Benjamini-Hochberg over the topics, the topics.emerging_* minimum "
            "rise), or it is a new topic that took that much traffic; else 0",
            labels=["topic"],
        )
        for p in self.current():
            info.add_metric([p.topic, p.label], 1.0)
            traces.add_metric([p.topic], float(p.traces))
            if p.share is not None:
                share.add_metric([p.topic], p.share)
            if p.change is not None:
                change.add_metric([p.topic], p.change)
            if p.emerging is not None:
                emerging.add_metric([p.topic], float(p.emerging))
        yield from (info, traces, share, change, emerging)

    def describe(self) -> Iterator[Metric]:
        return iter(())
