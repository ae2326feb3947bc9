"""`/metrics` over a real socket: OpenMetrics with exemplars for a scraper that asks for it,
the classic text format (same series, no exemplars) for every other one."""

from __future__ import annotations

import urllib.request
from types import MappingProxyType

from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_om
from prometheus_client.parser import text_string_to_metric_families as parse_text

from collector.jobs.recording.observers import Evaluated
from collector.jobs.run.publish import QualityPoint
from evaluators.outcome import Score
from exporters.http import MetricsServer, build_app, wants_openmetrics
from exporters.prometheus import QualityCollector
from exporters.quality import ResultsCache
from exporters.score_histograms import FAMILY, ScoreHistograms

PROMETHEUS_ACCEPT = (  # what Prometheus 2.42 sends (with or without exemplar storage)
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
    "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)


def _get(url: str, accept: str | None) -> tuple[str, str]:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(request, timeout=5) as response:
        return response.headers["Content-Type"], response.read().decode()


def _serve(with_quality: bool) -> MetricsServer:
    registry = CollectorRegistry()
    Counter("ragpulse_test_things", "things", registry=registry).inc()
    histograms = ScoreHistograms()
    registry.register(histograms)
    groups = MappingProxyType({"tenant": "acme"})
    histograms.observe(
        [Evaluated("j", "4bf92f3577b34da6a3ce929d0e0e4736", 1.7e9, groups, {"mrr": Score(0.2)})]
    )
    quality = None
    if with_quality:
        cache = ResultsCache()
        cache.update([QualityPoint("mrr", "1h", "", 0.5, 10, 0.4, 0.6, job="j", group_labels={})])
        quality = QualityCollector(cache, ["tenant"])
    return MetricsServer(build_app(registry, quality=quality), port=0).start()


def test_accept_header_parsing() -> None:
    assert wants_openmetrics(PROMETHEUS_ACCEPT)
    assert wants_openmetrics("Application/OpenMetrics-Text; version=1.0.0")
    assert not wants_openmetrics("text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
    assert not wants_openmetrics("")


def test_openmetrics_with_exemplars_only_when_asked() -> None:
    for with_quality in (True, False):
        server = _serve(with_quality)
        try:
            kind, body = _get(server.url + "/metrics", PROMETHEUS_ACCEPT)
            assert kind.startswith("application/openmetrics-text; version=1.0.0")
            assert body.endswith("# EOF\n") and body.count("# EOF") == 1
            families = {f.name: f for f in parse_om(body)}  # strict parser: valid OpenMetrics
            exemplars = [s.exemplar for s in families[FAMILY].samples if s.exemplar]
            assert [e.labels["trace_id"] for e in exemplars] == [
                "4bf92f3577b34da6a3ce929d0e0e4736"
            ] * 2
            assert families["ragpulse_test_things"].samples[0].value == 1.0
            assert ("ragpulse_metric_value" in families) is with_quality

            for accept in (None, "text/plain;version=0.0.4", "*/*"):
                kind, text = _get(server.url + "/metrics", accept)
                assert kind.startswith("text/plain")
                assert "# EOF" not in text and "4bf92f35" not in text
                names = {f.name for f in parse_text(text)}
                assert FAMILY in names and ("ragpulse_metric_value" in names) is with_quality
        finally:
            server.stop()


def test_quality_families_render_in_both_formats_and_prerender_the_one_asked_for() -> None:
    cache = ResultsCache()
    cache.update([QualityPoint("mrr", "1h", "", 0.5, 10, 0.4, 0.6, job="j", group_labels={})])
    quality = QualityCollector(cache, ["tenant"])
    registry = CollectorRegistry()
    registry.register(QualityCollector(cache, ["tenant"]))
    assert quality.render(openmetrics=True) == openmetrics_latest(registry)
    assert quality.render() == generate_latest(registry)
    quality.render(openmetrics=True)  # the scraper's format now
    cache.update([QualityPoint("mrr", "1h", "", 0.7, 12, 0.6, 0.8, job="j", group_labels={})])
    quality.prerender()  # after a job run
    assert quality._rendered[True][0] == cache.version  # ready for the next scrape
    assert quality._rendered[False][0] != cache.version  # not rendered for nobody
    assert b"ragpulse_metric_value{" in quality.render(openmetrics=True)
    assert b"0.7" in quality.render(openmetrics=True)
