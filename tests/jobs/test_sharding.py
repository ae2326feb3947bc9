"""Jobs sharded across real worker processes on PostgreSQL (`collector.jobs.sharding.sharded`).

Workers are `tests.jobs.shard_worker` processes (the service's runner, sharded, run after
run until nothing is left). Their results are compared with one in-process worker that
runs the job whole (`scheduler.shards = 0`, the unsharded path) on a copy of the data
(`shard_fleet.py`; with the real embedder: `test_sharding_real_embedder.py`).
The drift detectors are off: they are recomputed at most every `alerting.every` from the
outcomes in hand at that moment, so a worker that aggregated early would give its
earlier detector points again (as one worker does between recomputations).
"""

from __future__ import annotations

import json
import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from collector.jobs.traces.shard_scope import shard_of
from collector.store.models import JobOutcome, JobShard, Trace
from collector.store.session import make_engine, make_session_factory
from tests.fixtures.llm_server import ScriptedLLM, auto_reply
from tests.jobs.helpers import add_retrieval_traces, add_trace, assert_buckets_match_outcomes
from tests.jobs.shard_fleet import (
    assert_same_results,
    fill,
    finish,
    latest,
    single_worker,
    start,
)

pytestmark = pytest.mark.timeout(240)


@pytest.mark.slow
def test_three_workers_split_a_job_and_write_what_one_worker_writes(
    two_databases: tuple[str, str], tmp_path: Path
) -> None:
    sharded, whole = two_databases
    now = datetime.now(UTC)
    # 300 benchmark traces of the last 20 minutes (stable windows while the test runs)
    fill(two_databases, lambda s: add_retrieval_traces(s, now, 300, 1 / 3, seed=21))
    expected = single_worker(whole, "real_users_benchmark")

    env = {"RAGPULSE_SCHEDULER__SHARDS": "16", "RAGPULSE_SCHEDULER__INTERVAL_S": "1"}
    workers = start("real_users_benchmark", sharded, env, 3, tmp_path)
    finish(workers)
    reports = [w.reports() for w in workers]
    scored = [sum(r["new"] for r in rs) for rs in reports]
    assert sum(scored) == 300  # every trace scored once, by one worker
    assert sum(1 for n in scored if n > 0) >= 2, scored  # and the work was split
    engine = make_engine(sharded)
    try:
        got = latest(engine, "real_users_benchmark")
    finally:
        engine.dispose()
    assert len(expected) > 100
    assert_same_results(got, expected)


def _judge_env(server: ScriptedLLM) -> dict[str, Any]:
    return {
        "models": ["openai/judge-a"],
        "api_base": server.base_url,
        "api_key": "sk-x",
        "max_concurrency": 4,
        "max_retries": 0,
    }


def _outcome_ids(factory: Any, shards: list[int]) -> set[str]:
    with factory() as session:
        return set(
            session.scalars(
                select(JobOutcome.trace_id).where(
                    JobOutcome.job == "rag_quality", shard_of(JobOutcome.trace_id, 6).in_(shards)
                )
            )
        )


def _trace_count(factory: Any, shards: list[int]) -> int:
    with factory() as session:
        return int(
            session.scalar(select(func.count()).where(shard_of(Trace.trace_id, 6).in_(shards))) or 0
        )


@pytest.mark.slow
# Alone: the victim must win a shard from two other workers and be killed inside its batch;
# with another test's processes on the cores it lost every race once (-n 3, load 10).
@pytest.mark.serial
def test_a_worker_killed_mid_batch_loses_nothing_and_counts_nothing_twice(
    two_databases: tuple[str, str], tmp_path: Path, llm_server: ScriptedLLM
) -> None:
    sharded, whole = two_databases
    now = datetime.now(UTC)
    count = 24

    def add(session: Any) -> None:
        for i in range(count):
            add_trace(
                session,
                f"j{i}",
                now - timedelta(minutes=1 + i % 15),
                purposes=("judge",),
                question=f"What is item {i}?",
                answer=f"Item {i} is a test answer.",
                reference=f"Item {i} is a reference answer.",
                contexts=[{"id": "d1", "text": f"Item {i} is described here."}, {"id": "d2"}],
                tags={"tenant": "acme" if i % 2 else "beta"},
            )

    fill(two_databases, add)
    llm_server.fallback = auto_reply
    expected = single_worker(whole, "rag_quality", judge=_judge_env(llm_server))
    # a worker batches its share of the shards (2 of 6, ~8 traces): ~2 s, a kill lands inside
    llm_server.latency_s = 0.3

    judge = _judge_env(llm_server)
    env = {
        "RAGPULSE_SCHEDULER__SHARDS": "6",
        "RAGPULSE_SCHEDULER__SHARD_LEASE_S": "2",
        "RAGPULSE_SCHEDULER__INTERVAL_S": "1",
        "RAGPULSE_JUDGE__MODELS": judge["models"][0],
        "RAGPULSE_JUDGE__API_BASE": judge["api_base"],
        "RAGPULSE_JUDGE__API_KEY": judge["api_key"],
        "RAGPULSE_JUDGE__MAX_CONCURRENCY": "4",
        "RAGPULSE_JUDGE__MAX_RETRIES": "0",
    }
    workers = start("rag_quality", sharded, env, 3, tmp_path)
    victim, survivors = workers[0], workers[1:]
    engine = make_engine(sharded)
    factory = make_session_factory(engine)
    try:
        mark = f":{victim.process.pid}:"
        held: list[int] = []
        before: set[str] = set()
        deadline = time.monotonic() + 60
        # until the victim holds shards with work left in them (outcomes already there were
        # committed by a worker that held them before: workers start one after another)
        while not held or len(before := _outcome_ids(factory, held)) >= _trace_count(factory, held):
            assert time.monotonic() < deadline, "the victim never held a shard with work"
            with factory() as session:
                held = list(
                    session.scalars(
                        select(JobShard.shard).where(
                            JobShard.job == "rag_quality",
                            JobShard.owner.contains(mark),
                            JobShard.lease_until > func.clock_timestamp(),
                        )
                    )
                )
            time.sleep(0.1)  # three queries a round: more often only loads the database
        time.sleep(0.5)  # well inside its batch: judge calls in flight
        victim.process.send_signal(signal.SIGKILL)
        victim.process.wait(10)
        assert _outcome_ids(factory, held) == before  # it died before committing its batch
        finish(survivors)
        with factory() as session:
            rows = session.execute(
                select(JobOutcome.trace_id, JobOutcome.outcomes).where(
                    JobOutcome.job == "rag_quality"
                )
            ).all()
            owners = session.scalars(
                select(JobShard.owner).where(
                    JobShard.job == "rag_quality", JobShard.shard.in_(held)
                )
            ).all()
            assert_buckets_match_outcomes(session, "rag_quality")  # nothing counted twice
        got = latest(engine, "rag_quality")
    finally:
        engine.dispose()
    assert sorted(t for t, _ in rows) == sorted(f"j{i}" for i in range(count))
    assert not any("error" in json.dumps(o) for _, o in rows)
    assert all(mark not in (o or "") for o in owners)  # its shards were taken over
    logs = "".join(w.log.read_text() for w in survivors)
    assert "took over shard(s)" in logs
    scored = sum(r["new"] for w in survivors for r in w.reports())
    assert scored == count  # the victim's traces once, nobody's twice
    assert_same_results(got, expected)
