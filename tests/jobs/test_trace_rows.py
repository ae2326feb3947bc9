"""Jobs fetch only the sample columns their metrics read, with unchanged results."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine, select

from collector.jobs.run.definition import JobEnvironment
from collector.jobs.run.engine import IncrementalJob
from collector.jobs.run.evaluation import sample_fields
from collector.jobs.scheduler import definitions, job_options
from collector.jobs.traces.trace_rows import ALWAYS, SAMPLE_COLUMNS, columns_for
from collector.jobs.windows.window import parse_windows
from collector.settings import load_settings
from collector.store.models import MetricResult, Trace
from collector.store.samples import FIELD_COLUMNS, trace_to_sample
from collector.store.session import make_engine, make_session_factory
from evaluators.registry import FAMILIES, EvalContext, known_names, resolve
from evaluators.runner import evaluate
from evaluators.sample import Sample
from exporters.quality import ResultsCache
from tests.fixtures.embedder import VectorEmbedder
from tests.jobs.helpers import add_trace

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
UX_METRICS = ("cache_hit_rate", "cache_hit_rate_actual")
UX_SESSION_METRICS = ("context_preservation", "multi_turn_consistency")


def test_every_sample_field_maps_to_sample_columns() -> None:
    assert FIELD_COLUMNS.keys() == {f.name for f in dataclasses.fields(Sample)}
    mapped = {c for cols in FIELD_COLUMNS.values() for c in cols}
    assert mapped | {"id", "updated_at", "received_at", "model"} == {c.key for c in SAMPLE_COLUMNS}
    assert {c.key for c in SAMPLE_COLUMNS} >= ALWAYS


def test_declared_reads_name_sample_fields() -> None:
    known_names()  # imports every metric module
    for family, spec in FAMILIES.items():
        if spec.reads is not None:
            assert spec.reads <= FIELD_COLUMNS.keys(), family


def test_columns_for_fields() -> None:
    assert columns_for(None) is None
    assert columns_for({"answer"}) == ALWAYS | {"answer"}
    assert columns_for({"relevance"}) == ALWAYS | {"relevance", "relevant_ids", "shown_url"}
    with pytest.raises(ValueError, match=r"unknown Sample field\(s\) contexs; known: trace_id"):
        columns_for({"contexs"})


def test_a_job_reads_the_union_of_its_metrics_fields() -> None:
    ux = sample_fields(resolve(m) for m in (*UX_METRICS, *UX_SESSION_METRICS))
    assert ux == frozenset({"question", "answer", "timestamp", "session_id", "turn", "cache_hit"})
    # A metric that does not declare what it reads: everything is fetched.
    assert sample_fields([resolve("cache_hit_rate"), resolve("hit_rate@1")]) is None
    assert sample_fields([]) is None


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    eng = make_engine(db_url)
    yield eng
    eng.dispose()


def _add_traces(engine: Engine) -> list[str]:
    """Sessions with repeated and near-repeated questions, contexts, cache flags."""
    texts = []
    with make_session_factory(engine)() as session:
        for i in range(24):
            question = f"q{i % 5}"
            answer = f"a{i % 3}" if i % 4 else None
            texts += [question] + ([answer] if answer else [])
            add_trace(
                session,
                f"u{i}",
                NOW - timedelta(minutes=50 - 2 * i),
                question=question,
                answer=answer,
                contexts=[{"id": f"d{i}", "text": "retrieved text", "score": 0.5}],
                relevant_ids=[f"d{i}"],
                session_id=f"s{i % 4}" if i % 6 else None,
                turn=(i * 5) % 11,  # not in time order
                cache_hit=i % 3 == 0 if i % 7 else None,
                judge_decision=True,
                tags={"tenant": "acme" if i % 2 else "globex"},
            )
        session.commit()
    return texts


def _vectors(texts: list[str]) -> VectorEmbedder:
    rng = np.random.default_rng(7)
    base = {t: rng.normal(size=8) for t in sorted(set(texts))}
    # Near duplicates, so cache hits and answer agreement both occur.
    base["q3"] = base["q1"] + 0.05 * rng.normal(size=8)
    base["a2"] = base["a1"] + 0.3 * rng.normal(size=8)
    return VectorEmbedder(base)


def test_the_ux_job_skips_contexts_and_keeps_its_results(engine: Engine) -> None:
    embedder = _vectors(_add_traces(engine))
    settings = load_settings()
    rows: list[Any] = []

    def to_sample(row: Any) -> Sample:
        rows.append(row)
        sample: Sample = trace_to_sample(row)
        return sample

    env = JobEnvironment(
        session_factory=make_session_factory(engine),
        windows=parse_windows(settings.scheduler.windows),
        group_labels=settings.scheduler.group_labels,
        embedder=embedder,
        options=job_options(settings),
        results=ResultsCache(),
        to_sample=to_sample,
    )
    job = IncrementalJob(definitions(settings)["ux"], env)
    assert job.run(NOW).new_traces == 24
    assert rows and all(r.contexts is None and r.relevant_ids is None for r in rows)
    assert all(r.judge_decision is None for r in rows)
    assert {r.question for r in rows} == {f"q{i}" for i in range(5)}

    with make_session_factory(engine)() as session:
        full = [trace_to_sample(t) for t in session.scalars(select(Trace).order_by(Trace.id))]
    assert all(s.contexts for s in full)
    ctx = EvalContext(embedder=embedder, options=job_options(settings).metric_options)
    published = {(p.metric, p.group_key): p for p in job._publish if p.window == "1h"}
    want = evaluate(full, UX_METRICS, ctx, group_by="tenant")
    sessions = [s for s in full if s.session_id is not None]
    want_sessions = evaluate(sessions, UX_SESSION_METRICS, ctx, group_by="tenant")
    for result, metrics in ((want, UX_METRICS), (want_sessions, UX_SESSION_METRICS)):
        for metric in metrics:
            expected = [("", result.aggregates[metric])] + [
                (f"tenant={tenant}", aggs[metric]) for tenant, aggs in result.groups.items()
            ]
            for group_key, agg in expected:
                point = published[(metric, group_key)]
                assert (point.value, point.n) == (agg.value, agg.n), (metric, group_key)
    assert published[("cache_hit_rate", "")].value not in (None, 0.0, 1.0)
    assert published[("multi_turn_consistency", "")].value is not None
    # the scheduled results state the thresholds they used, as an offline run does
    with make_session_factory(engine)() as session:
        stored = set(
            session.scalars(
                select(MetricResult.signature).where(MetricResult.metric == "cache_hit_rate")
            )
        )
    assert stored == {str(want.aggregates["cache_hit_rate"].signature)}
    assert "thr:cache=0.85(generic)" in stored.pop()  # test vectors: no calibration
