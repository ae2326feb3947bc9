"""docs/ARCHITECTURE.md stays true: its first recipe works through its seams only, and every
file it names exists.

The recipe's steps, with a toy metric (the share of answered traces): register its
`MetricSpec`, add its name to a job's `METRICS`, run the scheduled job over stored traces,
read `/metrics` from the exporter, build the overview dashboard. Nothing else of ragpulse is
touched: if a step ever needs another edit, the recipe (and this test) must say so.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from collector.jobs.catalog import retrieval_health
from collector.jobs.scheduler import build_runner
from collector.settings import load_settings
from collector.store.session import make_engine, make_session_factory
from dashboards import boards
from evaluators import registry
from evaluators.outcome import Outcome, Score
from evaluators.registry import EvalContext, MetricSpec, register
from evaluators.sample import Sample
from ragpulse.job_setup import job_environment
from ragpulse.monitoring import Monitoring
from tests.jobs.helpers import add_trace

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ARCHITECTURE.md"
TOY = "toy_answered"
_TOP = "(?:collector|evaluators|exporters|dashboards|ragpulse|migrations|tests|docs)"


def toy_answered(samples: Sequence[Sample], ctx: EvalContext, k: int | None) -> list[Outcome]:
    """1 when the trace has an answer, else 0: a proportion."""
    return [Score(1.0 if s.answer else 0.0) for s in samples]


@pytest.fixture
def toy_metric(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    # step 2: register it (as its evaluators module would at import)
    register(
        MetricSpec(
            family=TOY,
            kind="per_sample",
            compute=toy_answered,
            needs="answer",
            description="Share of traces with an answer (a toy for the architecture test).",
            proportion=True,
            direction="higher",
            unit="ratio",
            reads=frozenset({"answer"}),
        )
    )
    # step 4: the job that has its inputs computes it
    monkeypatch.setattr(retrieval_health, "METRICS", (*retrieval_health.METRICS, TOY))
    try:
        yield TOY
    finally:
        registry.FAMILIES.pop(TOY, None)


def _store(url: str) -> None:
    engine = make_engine(url)
    now = datetime.now(UTC)
    with make_session_factory(engine)() as session:
        for i in range(40):
            add_trace(
                session,
                f"toy-{i}",
                now - timedelta(minutes=50 - i),
                answer=None if i % 4 == 0 else f"answer {i}",
                contexts=[{"id": f"d{i}", "text": "context"}],
                tags={"tenant": "acme"},
            )
        session.commit()
    engine.dispose()


def _panels(items: Sequence[Any]) -> Iterator[Any]:
    for panel in items:
        yield panel
        yield from _panels(panel.get("panels") or [])


def test_a_metric_added_by_the_recipe_is_computed_exported_and_on_a_panel(
    toy_metric: str, sqlite_url: str, embedder: Any
) -> None:
    _store(sqlite_url)
    settings = load_settings(database={"url": sqlite_url}, exporter={"port": 0})
    engine = make_engine(sqlite_url)
    monitoring = Monitoring(
        settings, engine, CollectorRegistry(), role="exporter", embedder=embedder
    ).start()
    try:
        env = job_environment(settings, engine, results=monitoring.results, embedder=embedder)
        reports = build_runner(settings, engine, env, names=[retrieval_health.NAME]).run_many()
        assert [r.status for r in reports] == ["ok"], reports

        assert monitoring.refresher is not None and monitoring.server is not None
        monitoring.refresher.refresh()  # the exporter's pass over the stored results
        url = f"http://127.0.0.1:{monitoring.server.port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            exposition = response.read().decode("utf-8")
        overall = [
            sample.value
            for family in text_string_to_metric_families(exposition)
            if family.name == "ragpulse_metric_value"
            for sample in family.samples
            if sample.labels.get("metric") == toy_metric
            and sample.labels.get("window") == "1h"
            and not any(sample.labels.get(g) for g in ("tenant", "version"))
        ]
        assert overall == [pytest.approx(30 / 40)], "the toy metric is not exported"
    finally:
        monitoring.stop()
        engine.dispose()

    board = json.loads(JSONEncoder().encode(boards.BOARDS["overview.json"]().build()))
    titles = [
        p.get("title", "")
        for p in _panels(board["panels"])
        if f'metric=\\"{toy_metric}\\"' in json.dumps(p.get("targets") or [])
    ]
    assert titles, "no panel of the overview queries the toy metric"


def test_every_file_the_architecture_doc_names_exists() -> None:
    text = DOC.read_text(encoding="utf-8")
    named = set(re.findall(rf"`({_TOP}/[\w/.]*\w)`", text))
    named |= set(re.findall(rf"\b({_TOP}/[\w/]+\.py)\b", text))
    assert len(named) > 20
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert missing == [], "docs/ARCHITECTURE.md names files that do not exist"
