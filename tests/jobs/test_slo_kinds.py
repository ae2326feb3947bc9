"""Latency and judge-agreement SLOs: their events come from the real jobs (UX over every
trace, the judge pipeline over the labelled ones), counted once, on both databases."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from sqlalchemy import delete, update

from collector.jobs.scheduler import build_runner, metric_jobs
from collector.settings import load_settings
from collector.slo.events import SloEventRecorder, read_counts, reconcile
from collector.store.models import SloEvent, Trace
from collector.store.session import make_engine, make_session_factory
from evaluators.embedder import Embedder
from exporters.slo import SloCollector
from ragpulse.job_setup import job_environment
from tests.jobs.helpers import add_trace

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
OBJECTIVES = [
    {"name": "fast", "kind": "latency", "limit": "2s", "target": 0.9},
    {"name": "agrees", "kind": "agreement", "target": 0.8},
]


def _counts(factory: Any) -> dict[tuple[str, str, str], int]:
    with factory() as session:
        return {(s, t, o): n for s, t, o, n in read_counts(session)}


def test_latency_and_agreement_events_from_the_jobs(db_url: str, embedder: Embedder) -> None:
    settings = load_settings(
        scheduler={"jobs": ["ux", "judge_pipeline"]}, slo={"objectives": OBJECTIVES}
    )
    specs = settings.slo.specs()
    engine = make_engine(db_url)
    factory = make_session_factory(engine)
    with factory() as session:
        for i in range(24):
            # no purposes: no trace is sampled, and every one with a latency is an event
            add_trace(
                session,
                f"t{i:02d}",
                NOW - timedelta(minutes=5 + i),
                latency_ms=None if i % 8 == 7 else 2000.0 + (i % 4) * 400 - 400,
                judge_decision=None if i >= 20 else i % 2 == 0,
                judge_label=None if i >= 16 else i % 3 != 0,
                tags={"tenant": "acme" if i < 12 else "beta"},
            )
        session.commit()
    recorder = SloEventRecorder(specs, factory, settings.slo.max_tenants)
    env = job_environment(settings, engine, embedder=embedder, observers=(recorder,))
    runner = build_runner(settings, engine, env)
    for name in ("ux", "judge_pipeline"):
        assert runner.jobs[name].run(NOW).status == "ok"
    # latency: 1600, 2000, 2400, 2800 ms in turn (<= 2 s good), every 8th trace has none
    # agreement: the 16 labelled traces with a decision; decision i even, label i % 3 != 0
    expected = {
        ("fast", "acme", "good"): 6,
        ("fast", "acme", "bad"): 5,
        ("fast", "beta", "good"): 6,
        ("fast", "beta", "bad"): 4,
        ("agrees", "acme", "good"): 6,
        ("agrees", "acme", "bad"): 6,
        ("agrees", "beta", "good"): 2,
        ("agrees", "beta", "bad"): 2,
    }
    assert _counts(factory) == expected
    # a label arriving later (t16: decision True, label False) makes the trace's event
    # then; a label corrected after its event (t00: was False) counts nothing again
    with factory() as session, session.begin():
        for trace_id, label in (("t16", False), ("t00", True)):
            session.execute(
                update(Trace)
                .where(Trace.trace_id == trace_id)
                .values(judge_label=label, updated_at=NOW + timedelta(minutes=1))
            )
    later = NOW + timedelta(minutes=10)
    for name in ("ux", "judge_pipeline"):
        assert runner.jobs[name].run(later).status == "ok"
    expected[("agrees", "beta", "bad")] += 1
    assert _counts(factory) == expected
    # the events the observer missed are recorded from the stored outcomes
    with factory() as session, session.begin():
        session.execute(delete(SloEvent).where(SloEvent.trace_id == "t03"))
    with factory() as session, session.begin():
        assert reconcile(session, specs, metric_jobs(settings), NOW - timedelta(days=1), 50) == 2
    registry = CollectorRegistry()
    registry.register(SloCollector(specs, factory))
    text = generate_latest(registry).decode()
    assert 'ragpulse_slo_events_total{outcome="bad",slo="fast",tenant="acme"} 6.0' in text
    # t03 (2800 ms, decision False = label False) counted again: its events were gone
    assert 'ragpulse_slo_events_total{outcome="good",slo="agrees",tenant="acme"} 7.0' in text
    assert 'ragpulse_slo_objective{metric="latency_ms",slo="fast"} 0.9' in text
    assert 'ragpulse_slo_objective{metric="judge_decision_correct",slo="agrees"} 0.8' in text
