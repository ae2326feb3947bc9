"""The service exports how many texts its embedding model cannot read (script mismatch)."""

from __future__ import annotations

import re
import urllib.request

from prometheus_client import CollectorRegistry

from collector.jobs.run.embeddings import RecentEmbeddings
from collector.settings import load_settings
from collector.store.session import make_engine
from evaluators.embedder import MINILM, Embedder
from exporters.prometheus import OperationsMetrics
from ragpulse.job_setup import observe_scripts
from ragpulse.monitoring import Monitoring
from tests.fixtures.embedder import VectorEmbedder


def _value(body: str, name: str, model: str) -> float | None:
    match = re.search(rf'^{name}{{model="{re.escape(model)}"}} (\S+)$', body, re.MULTILINE)
    return float(match.group(1)) if match else None


def test_service_exports_the_script_mismatch_of_its_model(
    sqlite_url: str, minilm_embedder: Embedder
) -> None:
    settings = load_settings(
        database={"url": sqlite_url},
        exporter={"port": 0},
        scheduler={"interval_s": 3600, "initial_delay_s": 3600},
    )
    model = Embedder(MINILM, precision=minilm_embedder.precision)
    model._engine = minilm_embedder._engine
    engine = make_engine(sqlite_url)
    monitoring = Monitoring(settings, engine, CollectorRegistry(), embedder=model).start()
    try:
        assert monitoring.server is not None
        url = f"http://127.0.0.1:{monitoring.server.port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            before = response.read().decode()
        model.encode(["Где мой заказ?", "Как вернуть товар?", "Where is my order?"])
        with urllib.request.urlopen(url, timeout=5) as response:
            after = response.read().decode()
    finally:
        monitoring.stop()
        engine.dispose()
    name = model.model_name
    assert _value(before, "ragpulse_embedding_script_mismatch_total", name) == 0.0
    assert _value(after, "ragpulse_embedding_texts_total", name) == 3.0
    assert _value(after, "ragpulse_embedding_script_mismatch_total", name) == 2.0
    assert _value(after, "ragpulse_embedding_script_mismatch_ratio", name) == 2 / 3


def test_observer_reaches_the_model_through_the_jobs_cache(minilm_embedder: Embedder) -> None:
    registry = CollectorRegistry()
    operations = OperationsMetrics(registry)
    model = Embedder(MINILM, precision=minilm_embedder.precision)
    model._engine = minilm_embedder._engine
    cached = RecentEmbeddings(model)
    assert observe_scripts(cached, operations.record_embedding_scripts)
    cached.encode(["Где мой заказ?", "Где мой заказ?"])
    cached.encode(["Где мой заказ?"])  # from memory: not encoded again, not counted
    labels = {"model": model.model_name}
    assert registry.get_sample_value("ragpulse_embedding_texts_total", labels) == 1.0
    assert registry.get_sample_value("ragpulse_embedding_script_mismatch_total", labels) == 1.0
    assert not observe_scripts(RecentEmbeddings(VectorEmbedder({"a": [1.0]})), print)
