"""The README's `/metrics` table names every series family the service registers, and
nothing it does not: a new counter without documentation fails here."""

from __future__ import annotations

import re
from pathlib import Path

from prometheus_client import CollectorRegistry

from collector.ingest.kafka.stats import ConsumerStats
from collector.ingest.otlp_http.stats import ReceiverStats
from evaluators.judge import JudgeClient, JudgeConfig
from exporters.evaluation_counts import EventCounters, EventCounts
from exporters.explanations import Explanations
from exporters.prometheus import JudgeStateCollector, OperationsMetrics, QualityCollector
from exporters.quality import ResultsCache
from exporters.score_histograms import ScoreHistograms

README = Path(__file__).resolve().parents[2] / "README.md"


def _documented() -> set[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("## `/metrics` series", 1)[1].split("\n## ", 1)[0]
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
    names = set()
    for family in registry.collect():
        # prometheus-client drops `_total` from a counter family's name.
        names.add(family.name + "_total" if family.type == "counter" else family.name)
    return names


def test_readme_documents_every_metrics_series() -> None:
    documented, exported = _documented(), _exported()
    assert exported - documented == set(), "add these to README.md's `/metrics` series table"
    assert documented - exported == set(), "README.md documents series nobody exports"
