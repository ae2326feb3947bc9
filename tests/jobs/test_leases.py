"""Shard leases on a real PostgreSQL: fair shares, SKIP LOCKED, expiry, takeover, fencing."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine, select, text

from collector.jobs.sharding.lease_keeper import LeaseKeeper
from collector.jobs.sharding.leases import LeaseLost, ShardConfig, ShardLeases
from collector.jobs.traces.shard_scope import shard_of
from collector.store.models import JobShard
from collector.store.session import make_engine, make_session_factory

JOB = "real_users_benchmark"
T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


@pytest.fixture
def engine(postgres_url: str) -> Iterator[Engine]:
    eng = make_engine(postgres_url)
    yield eng
    eng.dispose()


def _workers(engine: Engine, n: int, shards: int = 16, lease_s: float = 30.0) -> list[ShardLeases]:
    config = ShardConfig(shards, lease_s, interval_s=60.0, start_grace_s=0.0)
    workers = [ShardLeases(engine, JOB, f"w{i}", config) for i in range(n)]
    for w in workers:
        w.register()
    return workers


def _rows(engine: Engine) -> dict[int, JobShard]:
    with make_session_factory(engine)() as session:
        return {r.shard: r for r in session.scalars(select(JobShard).where(JobShard.job == JOB))}


def test_live_workers_claim_fair_disjoint_shares(engine: Engine) -> None:
    workers = _workers(engine, 3)
    since = [w.prepare(T0) for w in workers]
    assert [w.live for w in workers] == [3, 3, 3]
    claims = [w.claim(s) for w, s in zip(workers, since, strict=True)]
    got = [c.shards if c is not None else [] for c in claims]
    assert [len(g) for g in got] == [6, 6, 4]  # ceil(16 / 3), the rest to the last
    assert sorted(s for g in got for s in g) == list(range(16))
    assert workers[0].claim(since[0]) is None  # every shard is leased
    assert all(r.watermark == T0 for r in _rows(engine).values())  # the job's old watermark


def test_a_batch_fills_up_to_its_share_and_a_late_worker_shrinks_the_next_claims(
    engine: Engine,
) -> None:
    first, second = _workers(engine, 2)
    since = first.prepare(None)
    claim = first.claim(since)
    assert claim is not None and len(claim.shards) == 8  # 16 shards, 2 live workers
    assert first.claim(since, held=8) is None  # filling the batch keeps to the share
    _workers(engine, 3)[2].register()  # a third worker starts mid-run
    extra = second.claim(second.prepare(None))
    assert extra is not None and len(extra.shards) == 6  # ceil(16 / 3), counted at the claim


def test_a_just_started_worker_waits_for_the_workers_started_with_it(engine: Engine) -> None:
    config = ShardConfig(16, 30.0, interval_s=60.0, start_grace_s=1.0)
    early, late = (ShardLeases(engine, JOB, f"w{i}", config) for i in range(2))
    early.register()
    started = time.monotonic()
    timer = threading.Timer(0.6, late.register)  # started together, registered 0.6 s later
    timer.start()
    since = early.prepare(None)
    waited = time.monotonic() - started
    timer.join()
    assert early.live == 2 and waited >= 1.5  # a grace after the last one came, not its own
    claim = early.claim(since)
    assert claim is not None and len(claim.shards) == 8  # its share, not all 16
    again = ShardLeases(engine, JOB, "w0", config)  # a run later: no wait
    started = time.monotonic()
    again.prepare(None)
    assert time.monotonic() - started < 1.0


def test_claims_skip_rows_locked_by_another_transaction(engine: Engine) -> None:
    (worker,) = _workers(engine, 1)
    since = worker.prepare(None)
    with engine.connect() as other:
        other.execute(
            text("SELECT shard FROM job_shards WHERE job = :j AND shard < 10 FOR UPDATE"),
            {"j": JOB},
        )
        started = time.monotonic()
        claim = worker.claim(since)
        waited = time.monotonic() - started
        other.rollback()
    assert claim is not None and claim.shards == list(range(10, 16))
    assert waited < 1.0  # skipped, not waited for


def test_an_evaluated_shard_is_not_claimed_again_in_the_same_run(engine: Engine) -> None:
    (worker,) = _workers(engine, 1, shards=4)
    since = worker.prepare(None)
    claim = worker.claim(since)
    assert claim is not None and claim.shards == [0, 1, 2, 3]
    with make_session_factory(engine)() as session:
        worker.finish(session, claim.shards, T0, stored=True)
        session.commit()
    assert worker.claim(since) is None
    rows = _rows(engine)
    assert all(r.lease_until is None and r.watermark == T0 for r in rows.values())
    with make_session_factory(engine)() as session:
        assert worker.floor(session) == T0
        assert worker.stores(session) == 4  # one stored batch counted on each shard
    again = worker.claim(worker.prepare(None))  # the next run
    assert again is not None and again.shards == [0, 1, 2, 3]


def test_expired_lease_is_taken_over_and_the_stalled_worker_is_fenced(engine: Engine) -> None:
    dead, alive = _workers(engine, 2, shards=2, lease_s=1.0)
    first = dead.claim(dead.prepare(None))
    assert first is not None and first.shards == [0]  # 2 live workers: one shard each
    second = alive.claim(alive.prepare(None))
    assert second is not None and second.shards == [1]
    assert alive.claim(alive.prepare(None)) is None  # shard 0 is still leased
    time.sleep(1.2)
    taken = alive.claim(alive.prepare(None))
    assert taken is not None and taken.shards == [0] and taken.taken_over == {0: "w0"}
    with make_session_factory(engine)() as session:
        with pytest.raises(LeaseLost):
            dead.finish(session, [0], T0 + timedelta(hours=1), stored=True)
        session.rollback()
    with make_session_factory(engine)() as session:
        alive.finish(session, [0], T0, stored=True)
        session.commit()
    assert _rows(engine)[0].watermark == T0 and _rows(engine)[0].owner == "w1"


def test_a_renewed_lease_outlives_its_length(engine: Engine) -> None:
    holder, other = _workers(engine, 2, shards=1, lease_s=1.0)
    claim = holder.claim(holder.prepare(None))
    assert claim is not None
    with LeaseKeeper(holder, claim.shards) as keeper:
        time.sleep(2.0)
        assert other.claim(other.prepare(None)) is None
    assert not keeper.lost
    holder.release(claim.shards)
    assert other.claim(other.prepare(None)) is not None  # freed, not expired


def test_a_new_shard_count_restarts_every_shard_at_the_oldest_watermark(engine: Engine) -> None:
    (four,) = _workers(engine, 1, shards=4)
    claim = four.claim(four.prepare(None))
    assert claim is not None
    with make_session_factory(engine)() as session:
        four.finish(session, [0, 1], T0 + timedelta(hours=2), stored=True)
        four.finish(session, [2, 3], T0 + timedelta(hours=1), stored=True)
        session.commit()
    eight = ShardLeases(engine, JOB, "w0", ShardConfig(8, 30.0, 60.0))
    eight.prepare(None)
    rows = _rows(engine)
    assert sorted(rows) == list(range(8))
    assert {r.watermark for r in rows.values()} == {T0 + timedelta(hours=1)}


def test_presence_expires_and_a_stopped_worker_leaves(engine: Engine) -> None:
    a, b = _workers(engine, 2)
    a.prepare(None)
    assert a.live == 2 and a.want() == 8
    b.forget()
    a.prepare(None)
    assert a.live == 1 and a.want() == 16


def test_the_shard_of_a_trace_is_stable_and_spread(engine: Engine) -> None:
    with engine.connect() as conn:
        shards = [conn.execute(select(shard_of(f"trace-{i}", 8))).scalar_one() for i in range(400)]
        again = conn.execute(select(shard_of("trace-7", 8))).scalar_one()
    assert again == shards[7]
    counts = [shards.count(s) for s in range(8)]
    assert min(counts) > 25 and sum(counts) == 400  # ~50 each
