"""The hand-written table of the documentation's "Reading the series" page
(`docs/concepts/series.md`, once the README's `/metrics` table) names every series family
the service registers, and nothing it does not: a new counter without an explanation of
its labels and meaning fails here. (The generated reference, `docs/reference/series.md`,
lists them from the code; tests/ragpulse/test_docs_site.py checks that one.)"""

from __future__ import annotations

import re
from pathlib import Path

from prometheus_client import CollectorRegistry

from collector.ingest.kafka.stats import ConsumerStats
from collector.ingest.otlp_http.stats import ReceiverStats
from collector.settings import TopicSettings
from evaluators.judge import JudgeClient, JudgeConfig
from exporters.evaluation_counts import EventCounters, EventCounts
from exporters.explanations import Explanations
from exporters.prometheus import JudgeStateCollector, OperationsMetrics, QualityCollector
from exporters.quality import ResultsCache
from exporters.score_histograms import ScoreHistograms
from exporters.topics import TopicSeries

SERIES = Path(__file__).resolve().parents[2] / "docs" / "concepts" / "series.md"


def _documented() -> set[str]:
    section = SERIES.read_text(encoding="utf-8")
    rows = [line for line in section.splitlines() if line.startswith("| `ragpulse_")]
    return {name for row in rows for name in re.findall(r"`(ragpulse_\w+)`", row.split("|")[1])}


def _explanations() -> Explanations:
    """Nothing explained: its families are still collected (without samples)."""
    return Explanations(
        lambda: None,  # type: ignore[arg-type, return-value]
        {},
        dimensions=("tenant",),
        max_values=1,
        min_drop=0.05,
        every_s=1,
    )


def _exported() -> set[str]:
    registry = CollectorRegistry()
    ConsumerStats(registry)
    ReceiverStats(registry)
    OperationsMetrics(registry)
    registry.register(QualityCollector(ResultsCache()))
    registry.register(ScoreHistograms())
    registry.register(_explanations())
    judge = JudgeClient(JudgeConfig(models=("m",), structured_output="prompt"))
    judge.structured_output_fallbacks[("m", "json_schema", "prompt")] = 1
    registry.register(JudgeStateCollector(judge))
    registry.register(EventCounters(EventCounts()))
    registry.register(TopicSeries(lambda: None, TopicSettings(), every_s=1))  # type: ignore[arg-type, return-value]
    names = set()
    for family in registry.collect():
        # prometheus-client drops `_total` from a counter family's name.
        names.add(family.name + "_total" if family.type == "counter" else family.name)
    return names


def test_the_docs_explain_every_metrics_series() -> None:
    documented, exported = _documented(), _exported()
    assert exported - documented == set(), "add these to docs/concepts/series.md's table"
    assert documented - exported == set(), "docs/concepts/series.md explains series nobody exports"
