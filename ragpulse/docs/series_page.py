"""The `/metrics` reference: every series family the service registers, read from a fresh
registry holding every collector the roles of `ragpulse run` register (the consumer's and
the receiver's counters, the operations and quality collectors, the score histograms, the
explanations, the judge's state and the evaluation-event counters), with its type, labels
and help text."""

from __future__ import annotations

from prometheus_client import CollectorRegistry
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.metrics_core import Metric

from collector.ingest.kafka.stats import ConsumerStats
from collector.ingest.otlp_http.stats import ReceiverStats
from collector.settings import TopicSettings
from evaluators.judge import JudgeClient, JudgeConfig
from exporters.evaluation_counts import EventCounters, EventCounts
from exporters.explanations import Explanations
from exporters.prometheus import JudgeStateCollector, OperationsMetrics, QualityCollector
from exporters.quality import ResultsCache
from exporters.score_histograms import ScoreHistograms
from exporters.topics import TopicPoint, TopicSeries
from ragpulse.docs.markdown import BANNER, code, table

INTRO = """# `/metrics` series

Every series family ragpulse exports, read from the collectors the service registers
(`exporters/`, `collector/ingest/kafka/stats.py`, `collector/ingest/otlp_http/stats.py`).
prometheus-client also adds a `<name>_created` gauge (the creation time) to each counter
and histogram; a histogram's series are `<name>_bucket` (with `le`), `<name>_sum` and
`<name>_count`. Labels are listed where a family declares them up front; the quality
families' labels (`metric`, `window` and the group labels) are described in
[Reading the series](../concepts/series.md).

"""


def _nothing_explained() -> Explanations:
    """An explanation collector with nothing to explain: its families are still listed."""
    return Explanations(
        lambda: None,  # type: ignore[arg-type, return-value]
        {},
        dimensions=("tenant",),
        max_values=1,
        min_drop=0.05,
        every_s=1,
    )


def registry() -> CollectorRegistry:
    """A fresh registry with every collector of every role."""
    reg = CollectorRegistry()
    ConsumerStats(reg)
    ReceiverStats(reg)
    OperationsMetrics(reg)
    reg.register(QualityCollector(ResultsCache()))
    reg.register(ScoreHistograms())
    reg.register(_nothing_explained())
    topics = TopicSeries(lambda: None, TopicSettings(), every_s=1)  # type: ignore[arg-type, return-value]
    topics.publish([TopicPoint("0", "card, delivery", 10, 0.1, 0.0, False)])  # its labels
    reg.register(topics)
    judge = JudgeClient(JudgeConfig(models=("m",), structured_output="prompt"))
    judge.structured_output_fallbacks[("m", "json_schema", "prompt")] = 1
    reg.register(JudgeStateCollector(judge))
    reg.register(EventCounters(EventCounts()))
    return reg


def exported_name(family: Metric) -> str:
    """A family's name as scraped (prometheus-client drops a counter's `_total`)."""
    return family.name + "_total" if family.type == "counter" else family.name


def _declared_labels(reg: CollectorRegistry) -> dict[str, tuple[str, ...]]:
    """Family name -> the label names a prometheus-client metric object declares."""
    out: dict[str, tuple[str, ...]] = {}
    for collector in list(reg._collector_to_names):
        if isinstance(collector, MetricWrapperBase):
            for family in collector.describe():
                out[family.name] = tuple(collector._labelnames)
    return out


def families() -> list[tuple[str, str, list[str], str]]:
    """(name, type, labels, help) of every family, sorted by name."""
    reg = registry()
    declared = _declared_labels(reg)
    out = {}
    for family in reg.collect():
        seen = {k for sample in family.samples for k in sample.labels}
        labels = sorted((seen | set(declared.get(family.name, ()))) - {"le", "quantile"})
        out[exported_name(family)] = (family.type, labels, family.documentation)
    return [(name, *out[name]) for name in sorted(out)]


def render() -> str:
    rows = [
        [code(name), kind, ", ".join(code(label) for label in labels), text]
        for name, kind, labels, text in families()
    ]
    return BANNER + INTRO + table(("series", "type", "labels", "meaning"), rows)
