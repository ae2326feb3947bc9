"""One bad message never stops the stream: poison isolation, end to end.

Real broker, real SQLite and PostgreSQL, real processes. A batch that keeps failing for a
reason other than a database outage is written in halves after
`kafka.isolate_after_failures` attempts: the records the database refuses land in
`dead_letters` (reason and detail from the exception), the rest is stored, offsets are
committed. Records are refused here by what really breaks writers (the poison corpus of
issue 13) and by database triggers (real, non-connection database errors of any type).
"""

from __future__ import annotations

import json
import logging
import signal
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import create_engine, select, text

from collector.ingest.kafka.broker import free_port
from collector.ingest.kafka.isolation import (
    DeadLetterWriter,
    describe,
    is_database_unavailable,
    store_bisecting,
)
from collector.ingest.kafka.producer import OutgoingMessage
from collector.ingest.pipeline import BatchResult, Ingestor, RawMessage
from collector.settings import Settings, load_settings
from collector.store.repository import TRACES
from collector.store.session import make_engine, make_session_factory
from ragpulse.service import Service
from tests.collector.poison import corpus
from tests.collector.test_kafka_consumer import (
    _committed,
    _produce,
    _ragpulse,
    _scalar,
    _settings,
    _trace_ids,
    _wait_for,
)
from tests.collector.traces import trace_bytes, trace_id
from tests.fixtures.broker import KafkaTopics
from tests.fixtures.db import postgres_admin_url

pytestmark = pytest.mark.timeout(180)

BOUND = 2  # kafka.isolate_after_failures in these tests


def _run_until_idle(settings: Settings, idle_s: float = 1.5, limit_s: float = 90) -> Service:
    """`ingest --until-idle` in-process, but never longer than `limit_s` (a consumer stuck
    on a poison record would otherwise retry forever)."""
    service = Service(settings, registry=CollectorRegistry())
    thread = threading.Thread(target=service.run, kwargs={"idle_timeout_s": idle_s}, daemon=True)
    thread.start()
    thread.join(limit_s)
    if thread.is_alive():
        service.request_stop()
        thread.join(30)
        raise AssertionError(f"the consumer did not go idle within {limit_s}s (stuck?)")
    return service


def _dead_letters(url: str) -> dict[bytes, tuple[str, str]]:
    """raw -> (reason, detail) of every dead letter."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT raw, reason, detail FROM dead_letters")).all()
    finally:
        engine.dispose()
    return {bytes(raw): (reason, detail) for raw, reason, detail in rows}


def _read_back(url: str, trace: str) -> None:
    """A stored trace reads back through the service's own engine (orjson for JSON)."""
    engine = make_engine(url)
    try:
        with make_session_factory(engine)() as session:
            row = session.execute(select(TRACES).where(TRACES.c.trace_id == trace)).one()
            assert row.trace_id == trace
    finally:
        engine.dispose()


def _attempts(caplog: pytest.LogCaptureFixture) -> list[int]:
    """The attempt number of every logged failure of a batch (not outages)."""
    return [
        int(str(r.args[2]))
        for r in caplog.records
        if r.name == "collector.ingest.kafka.consumer"
        and str(r.msg).startswith("batch of")
        and isinstance(r.args, tuple)
    ]


def test_poison_corpus_is_isolated_and_every_good_trace_stored(
    db_url: str, kafka_topics: KafkaTopics, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    poisons = corpus(kafka_topics.traces, kafka_topics.otlp)
    messages: list[OutgoingMessage | bytes] = []
    for poison in poisons:
        messages += [poison.message, poison.follower]
    assert _produce(kafka_topics, messages) == len(messages)

    settings = _settings(
        db_url,
        kafka_topics,
        retry_initial_s=0.05,
        retry_max_s=0.2,
        isolate_after_failures=BOUND,
    )
    service = _run_until_idle(settings)

    stored = set(_trace_ids(db_url))
    assert {p.follower_trace_id for p in poisons} <= stored
    letters = _dead_letters(db_url)
    for poison in poisons:
        letter = letters.get(poison.message.value)
        if letter is None:
            assert poison.may_be_stored_as in stored, f"{poison.name}: neither refused nor stored"
            _read_back(db_url, poison.may_be_stored_as)
        else:
            reason, detail = letter
            assert reason and detail, poison.name
    # Everything is committed, nothing retried more than the bound, and the counts add up.
    assert sum(_committed(kafka_topics).values()) == len(messages)
    assert all(n <= BOUND for n in _attempts(caplog)), _attempts(caplog)
    summary = service.stats.summary()
    assert summary["consumed"] == len(messages)
    assert summary["invalid"] == len(letters)
    assert summary["consumed"] == (
        summary["stored"] + summary["duplicates"] + summary["feedback"] + summary["invalid"]
    )
    assert service.consumer.health().failures == 0
    assert service.registry.get_sample_value("ragpulse_consumer_stuck_seconds") == 0


REFUSE_TRACE = {
    "postgresql": [
        """CREATE FUNCTION refuse_trace() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.trace_id LIKE 'refused-%' THEN
            RAISE EXCEPTION 'trace % refused by policy', NEW.trace_id
              USING ERRCODE = 'P0001';
          END IF;
          RETURN NEW;
        END $$""",
        """CREATE TRIGGER refuse_trace BEFORE INSERT OR UPDATE ON traces
        FOR EACH ROW EXECUTE FUNCTION refuse_trace()""",
    ],
    "sqlite": [
        """CREATE TRIGGER refuse_trace BEFORE INSERT ON traces
        WHEN NEW.trace_id LIKE 'refused-%'
        BEGIN SELECT RAISE(ABORT, 'trace refused by policy'); END""",
    ],
}


def _execute(url: str, statements: Sequence[str]) -> None:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            for statement in statements:
                conn.execute(text(statement))
    finally:
        engine.dispose()


def _backend(url: str) -> str:
    return "sqlite" if url.startswith("sqlite") else "postgresql"


def _refused(i: int) -> bytes:
    return json.dumps(
        {"trace_id": f"refused-{i}", "timestamp": "2026-11-20T09:00:00Z", "question": "Как?"}
    ).encode()


@pytest.mark.slow
def test_a_record_the_database_refuses_goes_to_dead_letters_with_the_exception(
    db_url: str, kafka_topics: KafkaTopics, caplog: pytest.LogCaptureFixture
) -> None:
    """The generic path: a trigger raises a database error that is no outage (no list of
    known exception types is involved); the other 60 records of the batch are stored."""
    _execute(db_url, REFUSE_TRACE[_backend(db_url)])
    values = (
        [trace_bytes(i) for i in range(30)]
        + [_refused(1)]
        + [trace_bytes(i) for i in range(30, 60)]
    )
    key = b"one-partition"
    _produce(kafka_topics, [OutgoingMessage(v, kafka_topics.traces, key) for v in values])

    settings = _settings(db_url, kafka_topics, retry_initial_s=0.05, isolate_after_failures=BOUND)
    service = _run_until_idle(settings)

    assert sorted(_trace_ids(db_url)) == sorted(trace_id(i) for i in range(60))
    letters = _dead_letters(db_url)
    assert list(letters) == [_refused(1)]
    reason, detail = letters[_refused(1)]
    expected_type = "RaiseException" if _backend(db_url) == "postgresql" else "IntegrityError"
    assert reason == f"store_error:{expected_type}"
    assert detail.startswith(expected_type) and "refused by policy" in detail
    assert sum(_committed(kafka_topics).values()) == 61
    attempts = _attempts(caplog)
    assert attempts and max(attempts) == BOUND
    summary = service.stats.summary()
    assert (summary["stored"], summary["invalid"], summary["unstored"]) == (60, 1, 1)
    assert (
        service.registry.get_sample_value("ragpulse_traces_invalid_total", {"reason": reason}) == 1
    )


@pytest.fixture
def guarded_postgres(postgres_url: str) -> Iterator[str]:
    """PostgreSQL whose `traces` refuse ids `refused-*`, and whose `dead_letters` refuse
    rows holding the bytes `raw-refused` and any row about the trace `refused-lost`."""
    _execute(
        postgres_url,
        [
            *REFUSE_TRACE["postgresql"],
            """CREATE FUNCTION guard_dead_letters() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              IF position('raw-refused'::bytea in NEW.raw) > 0 THEN
                RAISE EXCEPTION 'raw bytes refused' USING ERRCODE = '22000';
              END IF;
              IF NEW.detail LIKE '%refused-lost%' THEN
                RAISE EXCEPTION 'dead letter refused' USING ERRCODE = 'P0001';
              END IF;
              RETURN NEW;
            END $$""",
            """CREATE TRIGGER guard_dead_letters BEFORE INSERT ON dead_letters
            FOR EACH ROW EXECUTE FUNCTION guard_dead_letters()""",
        ],
    )
    yield postgres_url


def _refused_named(name: str) -> bytes:
    return json.dumps(
        {"trace_id": f"refused-{name}", "timestamp": "2026-11-20T09:00:00Z", "question": "Как?"}
    ).encode()


@pytest.mark.slow
def test_a_dead_letter_the_database_refuses_does_not_stop_the_stream(
    guarded_postgres: str, kafka_topics: KafkaTopics
) -> None:
    """When even the dead letter is refused, it is kept without its raw bytes; when that is
    refused too, the record is skipped with an ERROR log and counted: the good traces after
    it are stored, offsets committed, and `ingest` exits 3 with its summary."""
    url = guarded_postgres
    raw_refused = _refused_named("raw-refused")
    lost = _refused_named("lost")
    values = [trace_bytes(1), raw_refused, trace_bytes(2), lost, trace_bytes(3), _refused(9)]
    key = b"one-partition"
    _produce(kafka_topics, [OutgoingMessage(v, kafka_topics.traces, key) for v in values])
    env = {
        **kafka_topics.env(url),
        "RAGPULSE_KAFKA__RETRY_INITIAL_S": "0.05",
        "RAGPULSE_KAFKA__ISOLATE_AFTER_FAILURES": str(BOUND),
    }
    process = _ragpulse(["ingest", "--until-idle", "1.5"], env)
    out, err = process.communicate(timeout=90)
    assert process.returncode == 3, err
    summary = json.loads(out)
    assert summary["stored"] == 3 and summary["invalid"] == 3 and summary["unstored"] == 3
    assert summary["consumed"] == 6
    assert "3 record(s) refused by the database" in err
    assert "could be neither stored nor dead-lettered" in err
    assert sorted(_trace_ids(url)) == [trace_id(1), trace_id(2), trace_id(3)]
    letters = _dead_letters(url)
    assert letters[_refused(9)][0] == "store_error:RaiseException"
    # the refused raw bytes: the letter is kept, empty, saying why
    bare = letters[b""]
    assert bare[0] == "store_error:RaiseException"
    assert "refused-raw-refused" in bare[1] and "could not be stored either" in bare[1]
    assert len(letters) == 2  # the lost one is only in the log (and the counters)
    assert sum(_committed(kafka_topics).values()) == 6


def _get(url: str) -> tuple[int, dict[str, Any] | str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            body = response.read().decode()
            status = response.status
    except urllib.error.HTTPError as exc:
        body = exc.read().decode()
        status = exc.code
    try:
        return status, json.loads(body)
    except ValueError:
        return status, body


@pytest.mark.slow
def test_run_is_not_ready_while_stuck_on_a_batch_and_ready_again_after(
    postgres_url: str, kafka_topics: KafkaTopics
) -> None:
    """`ragpulse run` with a record the database keeps refusing and isolation far away:
    `/readyz` turns 503 naming the stuck batch, the stuck gauges say where and how long;
    once the refusal ends (the trigger dropped) the batch goes through and all is well."""
    _execute(postgres_url, REFUSE_TRACE["postgresql"])
    key = b"one-partition"
    values = [trace_bytes(1), _refused(5), trace_bytes(2)]
    _produce(kafka_topics, [OutgoingMessage(v, kafka_topics.traces, key) for v in values])
    port = free_port()
    env = {
        **kafka_topics.env(postgres_url),
        "RAGPULSE_EXPORTER__PORT": str(port),
        "RAGPULSE_KAFKA__RETRY_INITIAL_S": "0.1",
        "RAGPULSE_KAFKA__RETRY_MAX_S": "0.3",
        "RAGPULSE_KAFKA__ISOLATE_AFTER_FAILURES": "100000",
        "RAGPULSE_KAFKA__UNREADY_AFTER_FAILURES": "3",
    }
    base = f"http://127.0.0.1:{port}"
    process = _ragpulse(["run", "--role", "consumer"], env)
    try:
        _wait_for(
            lambda: "stuck" in str(_consumer_check(base)), 60, "/readyz to report being stuck"
        )
        status, body = _get(base + "/readyz")
        assert status == 503
        assert isinstance(body, dict)
        consumer = json.dumps(body)
        assert "stuck for" in consumer and f"{kafka_topics.traces}/" in consumer
        assert "RaiseException" in consumer and "refused by policy" in consumer
        _, metrics = _get(base + "/metrics")
        assert isinstance(metrics, str)
        assert "ragpulse_consumer_stuck_seconds" in metrics
        offsets = [
            line
            for line in metrics.splitlines()
            if line.startswith("ragpulse_consumer_stuck_offset{")
        ]
        assert offsets and all(f'topic="{kafka_topics.traces}"' in line for line in offsets)
        stuck = _metric(metrics, "ragpulse_consumer_stuck_seconds")
        assert stuck is not None and stuck > 0
        assert _scalar(postgres_url, "SELECT count(*) FROM traces") == 0
        assert sum(_committed(kafka_topics).values()) == 0

        _execute(postgres_url, ["DROP TRIGGER refuse_trace ON traces"])
        _wait_for(lambda: _status(base + "/readyz") == 200, 60, "/readyz to turn 200 again")
        _, metrics = _get(base + "/metrics")
        assert isinstance(metrics, str)
        assert _metric(metrics, "ragpulse_consumer_stuck_seconds") == 0
        assert "ragpulse_consumer_stuck_offset{" not in metrics
        assert _scalar(postgres_url, "SELECT count(*) FROM traces") == 3
        assert sum(_committed(kafka_topics).values()) == 3
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err


def _consumer_check(base: str) -> str | None:
    try:
        _, body = _get(base + "/readyz")
    except urllib.error.URLError:
        return None
    return str(body["checks"].get("consumer")) if isinstance(body, dict) else None


def _status(url: str) -> int | None:
    """The status of GET `url`, None while nothing listens yet."""
    try:
        return _get(url)[0]
    except urllib.error.URLError:
        return None


def _metric(body: str, name: str) -> float | None:
    for line in body.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def _rollbacks(url: str) -> int:
    """Transactions rolled back in the test's database (the server's own statistics)."""
    name = url.rsplit("/", 1)[1]
    engine = create_engine(postgres_admin_url())
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_stat_clear_snapshot()"))
            value = conn.execute(
                text("SELECT xact_rollback FROM pg_stat_database WHERE datname = :name"),
                {"name": name},
            ).scalar()
    finally:
        engine.dispose()
    return int(value or 0)


@pytest.mark.slow
def test_ingest_exits_3_when_stopped_while_a_batch_keeps_failing(
    postgres_url: str, kafka_topics: KafkaTopics
) -> None:
    _execute(postgres_url, REFUSE_TRACE["postgresql"])
    key = b"one-partition"
    _produce(
        kafka_topics,
        [OutgoingMessage(v, kafka_topics.traces, key) for v in [trace_bytes(1), _refused(5)]],
    )
    env = {
        **kafka_topics.env(postgres_url),
        "RAGPULSE_KAFKA__RETRY_INITIAL_S": "0.1",
        "RAGPULSE_KAFKA__RETRY_MAX_S": "0.3",
        "RAGPULSE_KAFKA__ISOLATE_AFTER_FAILURES": "100000",
    }
    rollbacks = _rollbacks(postgres_url)
    process = _ragpulse(["ingest", "--until-idle", "600"], env)
    try:
        _wait_for(
            lambda: _rollbacks(postgres_url) >= rollbacks + 3, 60, "the batch to fail 3 times"
        )
        assert process.poll() is None, "ingest stopped although a batch keeps failing"
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 3, err
    assert json.loads(out)["consumed"] == 0
    assert "stopped while the batch at" in err and "refused by policy" in err
    assert sum(_committed(kafka_topics).values()) == 0


def test_bisection_finds_the_refused_records_with_few_transactions(sqlite_url: str) -> None:
    """`store_bisecting` with the real ingestor and SQLite: two records refused by a trigger
    among 64 are dead-lettered, 62 stored, in far fewer transactions than one per record."""
    _execute(sqlite_url, REFUSE_TRACE["sqlite"])
    settings = load_settings(database={"url": sqlite_url})
    ingestor = Ingestor(settings)
    engine = make_engine(sqlite_url)
    factory = make_session_factory(engine)
    values = [trace_bytes(i) for i in range(64)]
    values[10], values[50] = _refused(10), _refused(50)
    messages = [RawMessage("rag.traces", 0, i, None, v) for i, v in enumerate(values)]
    calls: list[int] = []

    def store(piece: Sequence[RawMessage]) -> BatchResult:
        calls.append(len(piece))
        with factory() as session:
            result = ingestor.ingest_batch(session, piece)
            session.commit()
            return result

    try:
        result = store_bisecting(messages, store, DeadLetterWriter(factory))
    finally:
        engine.dispose()
    assert (result.consumed, result.stored, result.invalid, result.unstored) == (64, 62, 2, 2)
    assert result.invalid_by_reason == {"store_error:IntegrityError": 2}
    assert len(calls) < 30  # one per record would be 64
    letters = _dead_letters(sqlite_url)
    assert set(letters) == {_refused(10), _refused(50)}
    assert len(_trace_ids(sqlite_url)) == 62


def test_outages_are_told_from_record_failures_by_real_errors(postgres_url: str) -> None:
    """Connection failures are outages (retried forever); an OperationalError a statement's
    content caused (stack depth, SQLSTATE 54001) and any other error are not."""
    engine = create_engine(postgres_url)
    try:
        with pytest.raises(Exception) as deep, engine.connect() as conn:
            conn.execute(text("SELECT (repeat('[', 200000) || repeat(']', 200000))::jsonb"))
        with pytest.raises(Exception) as refused, engine.connect() as conn:
            conn.execute(text("SELECT 1/0"))
    finally:
        engine.dispose()
    unreachable = create_engine("postgresql+psycopg://postgres@127.0.0.1:1/none")
    try:
        with pytest.raises(Exception) as down, unreachable.connect():
            pass
    finally:
        unreachable.dispose()
    assert type(deep.value).__name__ == "OperationalError"
    assert not is_database_unavailable(deep.value)
    assert not is_database_unavailable(refused.value)
    assert is_database_unavailable(down.value)
    assert not is_database_unavailable(RecursionError("deep"))


def test_describe_survives_an_exception_that_cannot_be_printed() -> None:
    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RecursionError("while formatting")

    assert describe(Unprintable()) == (
        "Unprintable: <message unavailable: RecursionError while formatting it>"
    )
    assert describe(ValueError("a\x00b")) == "ValueError: a\\x00b"
