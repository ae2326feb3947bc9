"""Jobs never look at traces that are no user request (`traces.not_request`): not the ones
over every trace (retrieval health, UX), not as the UX look-back's context."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine, select

from collector.jobs.run.definition import JobEnvironment
from collector.jobs.run.engine import IncrementalJob
from collector.jobs.scheduler import definitions
from collector.jobs.windows.window import parse_windows
from collector.settings import load_settings
from collector.store.models import JobOutcome, MetricResult
from collector.store.samples import trace_to_sample
from collector.store.session import make_engine, make_session_factory
from exporters.quality import ResultsCache
from tests.jobs.helpers import add_trace

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    eng = make_engine(db_url)
    yield eng
    eng.dispose()


@pytest.mark.parametrize("job", ["retrieval_health", "ux"])
def test_a_trace_that_is_no_request_is_never_evaluated(engine: Engine, job: str) -> None:
    settings = load_settings()
    ts = NOW - timedelta(minutes=5)
    with make_session_factory(engine)() as session:
        add_trace(session, "asked", ts, contexts=[{"id": "d1"}], cache_hit=True)
        add_trace(session, "empty", ts, contexts=None, cache_hit=False)
        # an index build: no contexts, no cache hit; counted it would lower both rates
        add_trace(session, "index", ts, question="", not_request="embedding", cache_hit=False)
        session.commit()
    env = JobEnvironment(
        session_factory=make_session_factory(engine),
        windows=parse_windows(settings.scheduler.windows),
        group_labels=settings.scheduler.group_labels,
        results=ResultsCache(),
        to_sample=trace_to_sample,
    )
    assert IncrementalJob(definitions(settings)[job], env).run(NOW).status == "ok"
    metric = "retrieval_empty_rate" if job == "retrieval_health" else "cache_hit_rate_actual"
    with make_session_factory(engine)() as session:
        scored = set(session.scalars(select(JobOutcome.trace_id).where(JobOutcome.job == job)))
        row = session.scalars(
            select(MetricResult).where(
                MetricResult.metric == metric,
                MetricResult.window == "1h",
                MetricResult.group_key == "",
            )
        ).one()
    assert scored == {"asked", "empty"}
    assert row.n == 2 and row.value == pytest.approx(0.5)
