"""`ragpulse ingest --workers N`: several consumer processes in one group, one summary.

Real broker, real PostgreSQL, real processes: every produced trace is stored exactly once
and every offset committed whether the workers stop by going idle or by SIGTERM.
"""

from __future__ import annotations

import json
import signal

import pytest

from collector.ingest.kafka.producer import OutgoingMessage, encode_record
from collector.ingest.kafka.workers import (
    EXIT_UNSTORED,
    SUMMARY_KEYS,
    WorkerFailedError,
    WorkerResult,
    _parse_summary,
    combined_summary,
    sum_summaries,
    worker_command,
)
from tests.collector.test_kafka_consumer import (
    _committed,
    _otlp,
    _produce,
    _ragpulse,
    _scalar,
    _wait_for,
)
from tests.collector.traces import make_feedback, trace_bytes
from tests.fixtures.broker import KafkaTopics

pytestmark = pytest.mark.timeout(120)


def _summary(**counts: int) -> dict[str, int]:
    return {key: counts.get(key, 0) for key in SUMMARY_KEYS}


def test_summaries_are_summed_key_by_key() -> None:
    a = _summary(consumed=4, stored=2, duplicates=1, feedback=1, invalid=0, sampled=1)
    b = _summary(consumed=6, stored=4, duplicates=0, feedback=1, invalid=1, sampled=2, unstored=1)
    assert sum_summaries([a, b]) == _summary(
        consumed=10, stored=6, duplicates=1, feedback=2, invalid=1, sampled=3, unstored=1
    )


def test_a_summary_is_the_last_json_line_with_every_key() -> None:
    good = json.dumps(_summary(consumed=1, stored=1)).encode()
    assert _parse_summary(b"noise\n" + good + b"\n") == json.loads(good)
    assert _parse_summary(b'{"consumed": 1}\n') is None
    assert _parse_summary(b"") is None


def test_a_failed_worker_is_named() -> None:
    ok = _summary(consumed=1, stored=1)
    results = [WorkerResult(0, 0, ok), WorkerResult(1, 1, None), WorkerResult(2, 0, None)]
    with pytest.raises(WorkerFailedError, match="2 of 3 workers failed: worker 2 exited with 1"):
        combined_summary(results)


def test_a_worker_with_unstored_records_did_not_fail() -> None:
    unstored = _summary(consumed=2, invalid=1, stored=1, unstored=1)
    results = [WorkerResult(0, EXIT_UNSTORED, unstored), WorkerResult(1, 0, _summary())]
    assert combined_summary(results) == unstored
    with pytest.raises(WorkerFailedError, match="worker 1 printed no summary"):
        combined_summary([WorkerResult(0, EXIT_UNSTORED, None)])


def test_worker_command_passes_the_config_and_runs_one_consumer() -> None:
    command = worker_command(2.5, config="ragpulse.yaml", log_level="DEBUG")
    assert command[1:] == [
        "-m",
        "ragpulse.cli",
        "--config",
        "ragpulse.yaml",
        "--log-level",
        "DEBUG",
        "ingest",
        "--until-idle",
        "2.5",
        "--workers",
        "1",
    ]


def test_workers_need_postgresql(sqlite_url: str, kafka_topics: KafkaTopics) -> None:
    process = _ragpulse(
        ["ingest", "--until-idle", "1", "--workers", "2"], kafka_topics.env(sqlite_url)
    )
    out, err = process.communicate(timeout=30)
    assert process.returncode == 2
    assert "needs PostgreSQL" in err
    assert out == ""


@pytest.mark.slow
def test_two_workers_store_every_trace_once(postgres_url: str, kafka_topics: KafkaTopics) -> None:
    total = 600
    _produce(kafka_topics, [trace_bytes(i) for i in range(total)] + [trace_bytes(5), b"{bad"])
    env = {**kafka_topics.env(postgres_url), "RAGPULSE_KAFKA__MAX_POLL_RECORDS": "50"}
    process = _ragpulse(["ingest", "--until-idle", "2", "--workers", "2", "--migrate"], env)
    out, err = process.communicate(timeout=90)
    assert process.returncode == 0, err
    summary = json.loads(out)
    assert summary["stored"] == total
    assert summary["invalid"] == 1
    # a rebalance while the second worker joins may hand a batch over: replays only add
    # to consumed and duplicates, never to stored
    assert summary["consumed"] >= total + 2
    assert summary["consumed"] == summary["stored"] + summary["duplicates"] + 1
    assert _scalar(postgres_url, "SELECT count(*) FROM traces") == total
    assert _scalar(postgres_url, "SELECT count(DISTINCT trace_id) FROM traces") == total
    assert _scalar(postgres_url, "SELECT count(*) FROM dead_letters") == 1
    assert sum(_committed(kafka_topics).values()) == total + 2


@pytest.mark.slow
def test_sigterm_reaches_every_worker(postgres_url: str, kafka_topics: KafkaTopics) -> None:
    total = 300
    _produce(kafka_topics, [trace_bytes(i) for i in range(total)])
    process = _ragpulse(
        ["ingest", "--until-idle", "600", "--workers", "2", "--migrate"],
        kafka_topics.env(postgres_url),
    )
    try:
        _wait_for(
            lambda: _scalar(postgres_url, "SELECT count(*) FROM traces") == total,
            60,
            "the workers to store every trace",
        )
        assert process.poll() is None, "the workers stopped before SIGTERM"
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert json.loads(out)["stored"] == total
    assert sum(_committed(kafka_topics).values()) == total


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_counts_add_up_with_feedback(
    workers: int, postgres_url: str, kafka_topics: KafkaTopics
) -> None:
    """consumed = stored + duplicates + feedback + invalid, with JSON and OTLP traces and
    feedback, with one worker and with two (where a rebalance may replay a batch: that adds
    to consumed and duplicates only)."""
    feedback = [
        OutgoingMessage(encode_record(make_feedback(i, rating=4)), kafka_topics.feedback)
        for i in range(0, 200, 4)
    ]
    otlp = [*_otlp(kafka_topics, seed=1)[0], *_otlp(kafka_topics, seed=2)[0]]
    messages: list[OutgoingMessage | bytes] = [trace_bytes(i) for i in range(200)]
    messages += [*otlp, b"{bad", *feedback]
    messages += [trace_bytes(3), otlp[1], feedback[0]]  # a repeat of each kind
    _produce(kafka_topics, messages)
    env = {**kafka_topics.env(postgres_url), "RAGPULSE_KAFKA__MAX_POLL_RECORDS": "40"}
    process = _ragpulse(
        ["ingest", "--until-idle", "2", "--workers", str(workers), "--migrate"], env
    )
    out, err = process.communicate(timeout=90)
    assert process.returncode == 0, err
    summary = json.loads(out)
    # 200 JSON traces and 4 OTLP messages (two per trace) each brought something new
    assert (summary["stored"], summary["feedback"], summary["invalid"]) == (204, 50, 1)
    assert summary["consumed"] >= len(messages)
    assert summary["duplicates"] >= 3
    assert summary["consumed"] == (
        summary["stored"] + summary["duplicates"] + summary["feedback"] + summary["invalid"]
    )
    assert _scalar(postgres_url, "SELECT count(*) FROM feedback") == 50
    assert sum(_committed(kafka_topics).values()) == len(messages)
