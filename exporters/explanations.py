"""Which slices a live drop comes from, on `/metrics`, so alerts and panels can name them.

After the jobs run (at most every `alerting.every`), each per-trace metric whose last
hour is worse than its 7-day value by at least `alerting.ticket_drop` (relative, in the
metric's bad direction; the exporter's own cached points, no query) is explained
(`collector.jobs.queries.explain`: the last hour against the 7 days before it). Metrics that are
not worse are not explained: on steady traffic this costs nothing.

Series (bounded: `TOP` slices per explained metric, slice names cut like label values):

    ragpulse_change_attribution{metric, rank, slice}   share of the change (0.8 = 80%);
                                                        rank 1 is the headline slice
    ragpulse_change_delta{metric}                 last hour minus the baseline mean

The generated alert rules read rank 1 with `query` in their annotations:
"hit_rate@1 got worse ... 80% of the change is tenant acme, version v7".
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy.orm import Session

from collector.jobs.queries.explain import Explanation, explain
from collector.jobs.run.publish import QualityPoint
from collector.jobs.windows.labels import clean_value

logger = logging.getLogger(__name__)

TOP = 3
WINDOW = "1h"
BASELINE = "7d"


def worse_metrics(
    points: Iterable[QualityPoint], directions: Mapping[str, str], min_drop: float
) -> list[str]:
    """Metrics (of `directions`: name -> "higher"/"lower") whose overall last-hour value
    is worse than their 7-day value by at least `min_drop`, relatively."""
    values: dict[tuple[str, str], float] = {}
    for p in points:
        if p.group_key == "" and p.value is not None and p.window in (WINDOW, BASELINE):
            values[p.metric, p.window] = p.value
    out = []
    for metric, direction in sorted(directions.items()):
        hour, week = values.get((metric, WINDOW)), values.get((metric, BASELINE))
        if hour is None or week is None or week == 0:
            continue
        change = (hour - week) / abs(week)
        if (direction == "higher" and change <= -min_drop) or (
            direction == "lower" and change >= min_drop
        ):
            out.append(metric)
    return out


class Explanations(Collector):
    """The latest explanation per metric, recomputed by `refresh` and read by scrapes."""

    def __init__(
        self,
        session_factory: Callable[[], Session],
        targets: Mapping[str, tuple[Sequence[str], str]],
        *,
        dimensions: Sequence[str],
        max_values: int,
        min_drop: float,
        every_s: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`targets`: metric -> (the jobs storing its per-trace outcomes, direction)."""
        self._sessions = session_factory
        self._targets = dict(targets)
        self._dimensions = tuple(dimensions)
        self._max_values = max_values
        self._min_drop = min_drop
        self._every_s = every_s
        self._clock = clock
        self._lock = threading.Lock()
        self._found: dict[str, Explanation] = {}
        self._last = float("-inf")

    def refresh(self, points: Iterable[QualityPoint], *, force: bool = False) -> int:
        """Explain the metrics that are worse now (at most every `every_s`); returns how
        many were explained. Errors are logged, not raised (it runs after the jobs)."""
        now = self._clock()
        if not force and now - self._last < self._every_s:
            return 0
        self._last = now
        directions = {m: d for m, (_, d) in self._targets.items()}
        found: dict[str, Explanation] = {}
        until = datetime.fromtimestamp(now, UTC)
        for metric in worse_metrics(points, directions, self._min_drop):
            jobs, _ = self._targets[metric]
            try:
                with self._sessions() as session:
                    made = explain(
                        session,
                        jobs=jobs,
                        metric=metric,
                        since=until - timedelta(hours=1),
                        until=until,
                        baseline=timedelta(days=7),
                        dimensions=self._dimensions,
                        max_values=self._max_values,
                    )
            except Exception:
                logger.exception("could not explain the change of %s", metric)
                continue
            if made is not None:
                found[metric] = made
        with self._lock:
            self._found = found
        return len(found)

    def current(self) -> dict[str, Explanation]:
        with self._lock:
            return dict(self._found)

    def collect(self) -> Iterator[Metric]:
        found = self.current()
        share = GaugeMetricFamily(
            "ragpulse_change_attribution",
            "Share of a metric's last-hour change against its 7-day baseline carried by a "
            "slice (shift-share: share x delta + mix; `ragpulse explain`), top slices of "
            "metrics that are worse now",
            labels=["metric", "rank", "slice"],
        )
        delta = GaugeMetricFamily(
            "ragpulse_change_delta",
            "Last-hour mean minus the 7-day baseline mean of a metric that is worse now",
            labels=["metric"],
        )
        for metric, made in sorted(found.items()):
            delta.add_metric([metric], made.delta)
            shown = [made.top] if made.top is not None else []
            shown += [c for c in made.slices if c.fraction > 0 and c not in shown]
            for rank, change in enumerate(shown[:TOP], start=1):
                name = clean_value(change.name) or "?"
                share.add_metric([metric, str(rank), name], change.fraction)
        yield share
        yield delta

    def describe(self) -> Iterator[Metric]:
        return iter(())
