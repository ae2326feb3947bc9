"""Sharded `text_quality` with the real default embedder (issue 31, part 5).

Each worker process encodes its own share of the answers and references, in batches of
its own, and stores the vectors it encoded in the `embeddings` table, where the others
(and a worker taking over a killed one's shards) read them. With the default model a
text's vector once depended on the batch it was encoded in, so 56 per-trace
`semantic_similarity` values of an operator's three-worker run differed from one
worker's by up to 1.1e-8 (and the rank-based drift statistics with them); the hashing
stand-in encoder of `test_sharding.py` cannot see that. Here every worker loads the
default model (`use-multilingual-v3`, from its package: offline), and the comparison
with one in-process worker over a copy of the traces is exact: per-trace outcomes, the
stored vectors, the results rows and the `/metrics` quality series.
"""

from __future__ import annotations

import os
import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine, func, select

from collector.jobs.traces.shard_scope import shard_of
from collector.settings import load_settings
from collector.store.models import EmbeddingRow, JobOutcome, JobShard, Trace
from collector.store.session import make_engine, make_session_factory
from evaluators.embedder import Embedder
from exporters.prometheus import QualityCollector
from exporters.quality import ResultsCache
from ragpulse.job_setup import label_limits
from tests.jobs.helpers import add_trace
from tests.jobs.shard_fleet import (
    Worker,
    assert_same_results,
    fill,
    finish,
    latest,
    single_worker,
    start,
)

pytestmark = pytest.mark.timeout(240)
JOB = "text_quality"
TOPICS = ("отпуск", "пароль", "refund", "delivery", "invoice", "больничный")


def _traces(count: int, now: datetime) -> Any:
    def add(session: Any) -> None:
        for i in range(count):
            topic = TOPICS[i % len(TOPICS)]
            add_trace(
                session,
                f"e{i}",
                now - timedelta(minutes=1 + i % 15),
                question=f"Question {i} about {topic}?",
                answer=f"Answer {i}: the {topic} is handled in portal section {i % 7}.",
                reference=f"The {topic} is handled in section {i % 5} of the portal.",
                tags={"tenant": "acme" if i % 2 else "beta"},
            )

    return add


def _outcomes(engine: Engine) -> dict[str, Any]:
    """trace id -> its stored outcomes (each metric's value as written: JSON floats)."""
    with make_session_factory(engine)() as session:
        rows = session.execute(
            select(JobOutcome.trace_id, JobOutcome.outcomes).where(JobOutcome.job == JOB)
        ).all()
    return {trace_id: outcomes for trace_id, outcomes in rows}


def _vectors(engine: Engine) -> dict[tuple[str, str], bytes]:
    """The `embeddings` cache: (model, text hash) -> the float32 bytes stored."""
    with make_session_factory(engine)() as session:
        rows = session.execute(
            select(EmbeddingRow.model, EmbeddingRow.text_hash, EmbeddingRow.vector)
        ).all()
    return {(model, key): bytes(vector) for model, key, vector in rows}


def _series(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every quality series an exporter serving this database's results shows on
    `/metrics` (as `ragpulse run --role exporter` builds it): (name, labels) -> value."""
    settings = load_settings(database={"url": url})
    engine = make_engine(url)
    try:
        cache = ResultsCache()
        with make_session_factory(engine)() as session:
            cache.load_latest(session)
    finally:
        engine.dispose()
    collector = QualityCollector(cache, settings.scheduler.group_labels, label_limits(settings))
    text = collector.render().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _assert_same_as_one_worker(sharded: str, whole: str, expected: Any, count: int) -> None:
    engines = [make_engine(url) for url in (sharded, whole)]
    try:
        got_outcomes, want_outcomes = (_outcomes(e) for e in engines)
        got_vectors, want_vectors = (_vectors(e) for e in engines)
        got = latest(engines[0], JOB)
    finally:
        for engine in engines:
            engine.dispose()
    assert sorted(got_outcomes) == sorted(f"e{i}" for i in range(count))
    similarity = [o["semantic_similarity"] for o in want_outcomes.values()]
    assert all(isinstance(v, float) for v in similarity), similarity[:3]
    assert got_outcomes == want_outcomes  # per trace, bit for bit (JSON floats round-trip)
    assert len(want_vectors) >= count and got_vectors == want_vectors
    assert any(metric == "semantic_similarity" for metric, _, _ in expected)
    assert_same_results(got, expected)  # value, n, CI, counts of every series
    series = _series(whole)
    assert sum(1 for name, _ in series if name == "ragpulse_metric_value") > 20
    served = _series(sharded)
    assert served.keys() == series.keys()  # the same series, to the last bits of the sums
    assert served == {
        key: pytest.approx(value, rel=1e-9, abs=1e-12) for key, value in series.items()
    }


@pytest.mark.slow  # 17 s alone: three processes load the model
def test_workers_with_the_real_embedder_write_what_one_worker_writes(
    two_databases: tuple[str, str], tmp_path: Path, embedder: Embedder
) -> None:
    sharded, whole = two_databases
    count = 90
    fill(two_databases, _traces(count, datetime.now(UTC)))
    expected = single_worker(whole, JOB, embedder=embedder)
    env = {"RAGPULSE_SCHEDULER__SHARDS": "8", "RAGPULSE_SCHEDULER__INTERVAL_S": "1"}
    workers = start(JOB, sharded, env, 3, tmp_path, "--real-embedder")
    finish(workers, timeout_s=200)
    scored = [sum(r["new"] for r in w.reports()) for w in workers]
    assert sum(scored) == count and sum(1 for n in scored if n > 0) >= 2, scored
    _assert_same_as_one_worker(sharded, whole, expected, count)


def _pending_shards(engine: Engine, mark: str, shards: int) -> list[int]:
    """The shards `mark`'s worker leases that still hold traces without outcomes."""
    with make_session_factory(engine)() as session:
        held = list(
            session.scalars(
                select(JobShard.shard).where(
                    JobShard.job == JOB,
                    JobShard.owner.contains(mark),
                    JobShard.lease_until > func.clock_timestamp(),
                )
            )
        )
        if not held:
            return []
        traces = session.scalar(
            select(func.count()).where(shard_of(Trace.trace_id, shards).in_(held))
        )
        done = session.scalar(
            select(func.count()).where(
                JobOutcome.job == JOB, shard_of(JobOutcome.trace_id, shards).in_(held)
            )
        )
    return held if (done or 0) < (traces or 0) else []


def _kill_inside_a_batch(victim: Worker, engine: Engine, shards: int) -> list[int]:
    """SIGKILL `victim` while it leases shards whose traces it has not stored yet (stopped
    first, then checked again, so the kill cannot land just after its commit); the shards."""
    pid = victim.process.pid
    mark = f":{pid}:"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if _pending_shards(engine, mark, shards):
            os.kill(pid, signal.SIGSTOP)
            held = _pending_shards(engine, mark, shards)
            if held:
                victim.process.send_signal(signal.SIGKILL)
                victim.process.wait(10)
                return held
            os.kill(pid, signal.SIGCONT)  # it committed in between: wait for its next batch
        assert victim.process.poll() is None, "the victim finished before it could be killed"
        time.sleep(0.05)
    raise AssertionError("the victim never held a shard with work left")


@pytest.mark.slow
def test_workers_with_the_real_embedder_one_killed_write_what_one_worker_writes(
    two_databases: tuple[str, str], tmp_path: Path, embedder: Embedder
) -> None:
    # The victim dies inside a batch (its first loads the model: seconds), after it may have
    # stored vectors of its share: whoever takes its shards over reads those from the
    # `embeddings` table and encodes the rest in batches of its own.
    sharded, whole = two_databases
    count, shards = 96, 6  # a share a loaded machine still catches inside a batch
    fill(two_databases, _traces(count, datetime.now(UTC)))
    expected = single_worker(whole, JOB, embedder=embedder)
    env = {
        "RAGPULSE_SCHEDULER__SHARDS": str(shards),
        "RAGPULSE_SCHEDULER__SHARD_LEASE_S": "2",
        "RAGPULSE_SCHEDULER__INTERVAL_S": "1",
    }
    workers = start(JOB, sharded, env, 3, tmp_path, "--real-embedder")
    victim, survivors = workers[0], workers[1:]
    engine = make_engine(sharded)
    try:
        held = _kill_inside_a_batch(victim, engine, shards)
    finally:
        engine.dispose()
        if victim.process.poll() is None:  # the test failed before the kill
            victim.process.kill()
    finish(survivors, timeout_s=150)
    assert held
    logs = "".join(w.log.read_text() for w in survivors)
    assert "took over shard(s)" in logs
    # the others scored what the victim left; none twice (a batch the victim committed in
    # the run it died in is in no report of its own)
    redone = sum(r["new"] for w in survivors for r in w.reports())
    assert redone > 0 and redone + sum(r["new"] for r in victim.reports()) <= count
    _assert_same_as_one_worker(sharded, whole, expected, count)
