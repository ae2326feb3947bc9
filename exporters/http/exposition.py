"""The `/metrics` body: the registry's series and the pre-rendered quality families, in
the text format 0.0.4 or, for a scraper that asks for it, in OpenMetrics 1.0 (the only
format with exemplars)."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest

_EOF = b"# EOF\n"


def scrape(registry: CollectorRegistry, quality: Any = None, openmetrics: bool = False) -> bytes:
    """The `/metrics` body: the registry's series, then the pre-rendered quality families
    (`QualityCollector.render()`, kept out of the registry so they are formatted once).
    With `openmetrics`, both in OpenMetrics 1.0 (the only format with exemplars), one `# EOF`."""
    if not openmetrics:
        body = generate_latest(registry)
        return body + quality.render() if quality is not None else body
    series: bytes = openmetrics_latest(registry)  # type: ignore[no-untyped-call]
    if quality is None:
        return series
    rendered: bytes = quality.render(openmetrics=True)
    return series.removesuffix(_EOF) + rendered


def wants_openmetrics(accept: str) -> bool:
    """Whether an `Accept` header asks for OpenMetrics (Prometheus 2.x does, preferring it
    to the text format; it keeps the exemplars with its exemplar storage on); any other
    scraper gets the text format."""
    return any(
        part.split(";")[0].strip().lower() == "application/openmetrics-text"
        for part in accept.split(",")
    )
