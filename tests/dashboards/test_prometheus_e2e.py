"""End to end against a real Prometheus: traces in SQL -> jobs -> /metrics -> scraped.

Every PromQL expression of every shipped dashboard panel must return data, and every
shipped rule must load and evaluate without error (`/api/v1/rules` health "ok").
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import Engine

from collector.ingest.kafka.stats import ConsumerStats
from collector.ingest.pipeline import BatchResult
from collector.settings import load_settings
from collector.store.models import HumanLabel
from collector.store.samples import trace_to_sample
from collector.store.session import make_engine, make_session_factory
from dashboards.boards import SLO_EXAMPLE
from dashboards.conditions import NOT_WORSE, NOTHING_FIRING, TOPICS
from evaluators.registry import describe
from ragpulse.monitoring import Monitoring
from tests.fixtures.llm_server import ScriptedLLM, auto_reply
from tests.jobs.helpers import add_trace, ok_or_no_vectors

ROOT = Path(__file__).resolve().parents[2] / "dashboards"


def _traffic(engine: Engine) -> None:
    now = datetime.now(UTC)
    questions = [
        "how do I reset my password",
        "how to reset the password",
        "what is the vpn address",
        "как получить доступ к vpn",
        "where is the holiday calendar",
        "how do I book a room",
    ]
    with make_session_factory(engine)() as session:
        for i in range(36):
            tenant = "acme" if i % 2 else "beta"
            add_trace(
                session,
                f"e2e-{i}",
                now - timedelta(minutes=50 - i),
                purposes=("real_users_benchmark", "judge"),
                question=questions[i % len(questions)],
                answer=f"Answer number {i % 4} about {questions[i % len(questions)]}",
                reference=f"Answer number {i % 3} about {questions[i % len(questions)]}",
                contexts=[
                    {"id": f"d{i % 3}", "text": "Reset it on the portal."},
                    {"id": "d9", "text": "Other."},
                ],
                relevant_ids=[f"d{i % 4}"],
                session_id=f"s{i // 3}",
                turn=i % 3,
                judge_decision=bool(i % 3),
                judge_label=bool(i % 4),
                judge_latency_ms=100.0 + i,
                latency_ms=1500.0 + 25 * i,  # above 2.2 s from i = 29: the latency SLO's bad
                cache_hit=bool(i % 5 == 0),
                cache_similarity=0.9,
                tags={"tenant": tenant, "version": "v2" if i % 3 else "v1"},
            )
            # human labels (judge_agreement's agreement and corrected series)
            for metric, value in (("e2e_score", (i % 5) / 4), ("context_relevance", i % 3)):
                session.add(
                    HumanLabel(
                        trace_id=f"e2e-{i}", metric=metric, labeler="", value=value, timestamp=now
                    )
                )
        # two days earlier: the drift detectors' baseline (the 24h before now is tested)
        for i in range(80):
            add_trace(
                session,
                f"e2e-old-{i}",
                now - timedelta(days=2, minutes=i),
                purposes=("real_users_benchmark",),
                question=questions[i % len(questions)],
                contexts=[{"id": f"d{i % 3}"}, {"id": "d9"}],
                relevant_ids=[f"d{i % 4}"],
                latency_ms=1500.0 + 10 * i,
                tags={"tenant": "acme" if i % 2 else "beta"},
            )
        session.commit()


def _panel_exprs() -> list[tuple[str, str]]:
    exprs = []
    for path in sorted((ROOT / "grafana" / "dashboards").glob("*.json")):
        board = json.loads(path.read_text())
        for panel in board["panels"]:
            for target in panel.get("targets", []):
                expr = target["expr"]
                expr = (
                    expr.replace('tenant=~"$tenant"', 'tenant=~""')
                    .replace('version=~"$version"', 'version=~".+"')
                    .replace('tenant=~"$slo_tenant"', 'tenant=~".*"')
                    .replace("$__rate_interval", "30s")
                )
                assert "$" not in expr, expr
                exprs.append((f"{path.name}: {panel['title']}", expr))
    return exprs


def healthy_empty_panels(texts: set[str]) -> set[str]:
    """The panels (as `_panel_exprs` names them) whose no-data text is one of `texts`."""
    out = set()
    for path in sorted((ROOT / "grafana" / "dashboards").glob("*.json")):
        for panel in json.loads(path.read_text())["panels"]:
            no_value = panel.get("fieldConfig", {}).get("defaults", {}).get("noValue")
            if no_value in texts:
                out.add(f"{path.name}: {panel['title']}")
    return out


@pytest.mark.slow
def test_dashboards_and_rules_on_a_real_prometheus(
    sqlite_url: str, prometheus_server: Any, llm_server: ScriptedLLM, embedder: Any
) -> None:
    llm_server.fallback = auto_reply
    settings = load_settings(
        database={"url": sqlite_url},
        exporter={"port": 0},
        judge={
            "models": ["openai/judge-e2e"],
            "api_base": llm_server.base_url,
            "api_key": "test",
            "max_usd_per_day": 5.0,
        },
        scheduler={"consistency_sample": 4, "judge_traces_per_run": 40},
        canary={"min_traces": 5},
        slo={"openslo_file": str(SLO_EXAMPLE)},
    )
    engine = make_engine(sqlite_url)
    _traffic(engine)
    registry = CollectorRegistry()
    stats = ConsumerStats(registry)
    monitoring = Monitoring(settings, engine, registry, role="exporter", embedder=embedder)
    monitoring.start()
    # The scheduler role's runner, driven by hand here: run every job once now.
    from dataclasses import replace

    from collector.jobs.scheduler import build_runner
    from ragpulse.job_setup import JudgmentsFeed, job_environment, observe_scripts
    from ragpulse.slo_setup import slo_recorder

    recorder = slo_recorder(settings, make_session_factory(engine))
    assert recorder is not None
    env = replace(
        job_environment(settings, engine, results=monitoring.results, embedder=embedder),
        to_sample=trace_to_sample,
        observers=(monitoring.histograms, recorder),  # as the scheduler role wires them
    )
    registry.register(monitoring.histograms)
    observe_scripts(env.embedder, monitoring.operations.record_embedding_scripts)
    runner = build_runner(settings, engine, env, operations=monitoring.operations)
    feed = JudgmentsFeed(monitoring.operations, make_session_factory(engine))
    feed.sync()
    assert monitoring.server is not None
    prom = prometheus_server(
        [f"127.0.0.1:{monitoring.server.port}"],
        sorted((ROOT / "prometheus" / "rules").glob("*.yml")),
    )
    try:
        for tick in range(4):
            batch = BatchResult(consumed=10, stored=9, invalid=1, sampled=3)
            batch.invalid_by_reason = {"invalid_json": 1}
            batch.field_warnings = {"turn": 1}
            batch.sampled_by_purpose = {"judge": 1, "real_users_benchmark": 2}
            batch.consumed_by_topic = {"rag.traces": 10}
            batch.otlp_traces = {"openinference": 3, "genai": 1}
            batch.otlp_incomplete = {("genai", "answer"): 1, ("openinference", "contexts"): 1}
            stats.record(batch)
            stats.set_lag("rag.traces", 0, 5 + tick)
            reports = runner.run_many()
            # the topics job has no stored vectors to cluster on SQLite by default
            assert all(ok_or_no_vectors(r) for r in reports)
            feed.sync()
            time.sleep(1.5)
        assert prom.wait_for('ragpulse_metric_value{metric="faithfulness"}')
        # A healthy system fires nothing and has nothing worse to explain: those panels are
        # empty here by design (they say so: dashboards/conditions.py); their queries must
        # still be valid PromQL (`query` raises on an error).
        # The topics row too: SQLite keeps no question vectors by default, so no topics.
        empty_by_design = healthy_empty_panels({NOTHING_FIRING.text, NOT_WORSE.text, TOPICS.text})
        exprs = _panel_exprs()
        for where, expr in exprs:
            if where in empty_by_design:
                prom.query(expr)
        missing = [
            (where, expr)
            for where, expr in exprs
            if where not in empty_by_design and not prom.wait_for(expr, timeout=5)
        ]
        assert missing == []
        # versions are a group label: a series per version; where both group labels are
        # empty, the overall value alone
        query = 'ragpulse_metric_value{metric="hit_rate@1",window="24h",tenant="",version=""}'
        assert len(prom.query(query)) == 1
        versioned = prom.query('ragpulse_metric_value{metric="hit_rate@1",version!=""}')
        assert {s["metric"]["version"] for s in versioned} == {"v1", "v2"}
        # Every value lies within the range its registered unit declares.
        outside = []
        for series in prom.query("ragpulse_metric_value"):
            metric, value = series["metric"]["metric"], float(series["value"][1])
            low, high = describe(metric).value_range
            if (low is not None and value < low) or (high is not None and value > high):
                outside.append((metric, value))
        assert outside == []
        deadline = time.monotonic() + 20
        while True:
            groups = prom.api("rules")["groups"]
            rules = [r for g in groups for r in g["rules"]]
            if rules and all(r.get("lastEvaluation", "").startswith("20") for r in rules):
                break
            assert time.monotonic() < deadline, "rules were not evaluated"
            time.sleep(0.5)
        bad = [(r["name"], r.get("lastError")) for r in rules if r["health"] != "ok"]
        assert bad == []
        alerts = sum(1 for r in rules if r["type"] == "alerting")
        assert alerts >= 17
    finally:
        monitoring.stop()
        engine.dispose()
