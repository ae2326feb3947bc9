"""`ragpulse_slo_events_total{slo, tenant, outcome}` and the SLOs' objective and window.

The counters are the SLI events the jobs recorded (`collector.slo.events`), read
from `slo_event_counts` in `collect()`: the table is small (SLOs x tenants x 2 rows) and
its counts only grow, so every process that serves them serves the same monotonic
counters, across restarts, which Sloth, Pyrra or any OpenSLO tool can take as a ratio SLI
(good = `outcome="good"`, total = both). `ragpulse_slo_objective{slo, metric}` (the
target) and `ragpulse_slo_window_seconds{slo}` are info gauges for dashboards and tools
that read the objective from Prometheus. A database error is logged and leaves the
counters out of that scrape (absent, never a zero that would read as a reset).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from sqlalchemy.orm import Session, sessionmaker

from collector.settings import SloSpec
from collector.slo.events import read_counts

logger = logging.getLogger(__name__)

EVENTS = "ragpulse_slo_events"
OBJECTIVE = "ragpulse_slo_objective"
WINDOW = "ragpulse_slo_window_seconds"


class SloCollector(Collector):
    """The SLO families, from the stored counts and the declared SLOs."""

    def __init__(self, specs: Sequence[SloSpec], factory: sessionmaker[Session]) -> None:
        self.specs = tuple(specs)
        self.factory = factory

    def describe(self) -> Iterator[Metric]:
        yield from self._families(counts=[])

    def collect(self) -> Iterator[Metric]:
        try:
            with self.factory() as session:
                counts = read_counts(session)
        except Exception:
            logger.exception("could not read the SLO event counts")
            yield from self._families(counts=None)
            return
        yield from self._families(counts)

    def _families(self, counts: list[tuple[str, str, str, int]] | None) -> Iterator[Metric]:
        declared = {s.name for s in self.specs}
        if counts is not None:
            events = CounterMetricFamily(
                EVENTS,
                "SLI events of each quality SLO by tenant: a trace's outcome of the SLO's "
                "metric, good or bad, counted once.",
                labels=["slo", "tenant", "outcome"],
            )
            for slo, tenant, outcome, count in counts:
                if slo in declared:  # a removed SLO's counts stay stored, not exported
                    events.add_metric([slo, tenant, outcome], float(count))
            yield events
        objective = GaugeMetricFamily(
            OBJECTIVE,
            "The objective (target share of good events) of each quality SLO.",
            labels=["slo", "metric"],
        )
        window = GaugeMetricFamily(
            WINDOW, "The rolling window of each quality SLO, in seconds.", labels=["slo"]
        )
        for spec in self.specs:
            objective.add_metric([spec.name, spec.metric], spec.target)
            window.add_metric([spec.name], spec.window_s)
        yield objective
        yield window
