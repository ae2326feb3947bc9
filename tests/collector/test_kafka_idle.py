"""`IdleClock`: when `ragpulse ingest --until-idle` stops."""

from __future__ import annotations

from collector.ingest.kafka.idle import IdleClock


def test_stops_after_the_idle_time_while_holding_partitions() -> None:
    clock = IdleClock(3, 20, now=0)
    assert clock.stop_reason({"p0"}, 1) is None
    clock.activity(2)
    assert clock.stop_reason({"p0"}, 4.9) is None
    assert clock.stop_reason({"p0"}, 5) == "no message for 3s"


def test_a_new_assignment_restarts_the_clock() -> None:
    # a second worker joining: the group re-forms and nothing arrives for a while
    clock = IdleClock(3, 20, now=0)
    clock.activity(1)
    assert clock.stop_reason({"p0", "p1"}, 2) is None
    assert clock.stop_reason(set(), 3) is None  # revoked while the group re-forms
    assert clock.stop_reason(set(), 6) is None
    assert clock.stop_reason({"p0"}, 7) is None
    assert clock.stop_reason({"p0"}, 9.9) is None
    assert clock.stop_reason({"p0"}, 10) == "no message for 3s"


def test_activity_such_as_a_failed_batch_restarts_the_clock() -> None:
    clock = IdleClock(3, 20, now=0)
    assert clock.stop_reason({"p0"}, 2) is None
    clock.activity(2.5)
    assert clock.stop_reason({"p0"}, 5) is None
    assert clock.stop_reason({"p0"}, 5.5) == "no message for 3s"


def test_without_partitions_it_waits_the_longer_limit() -> None:
    clock = IdleClock(3, 20, now=0)
    assert clock.stop_reason(set(), 19) is None
    assert clock.stop_reason(set(), 20) == "no partition assigned for 20s"
    clock = IdleClock(3, 20, now=0)
    assert clock.stop_reason({"p0"}, 1) is None
    assert clock.stop_reason(set(), 2) is None  # lost its partitions at 2
    assert clock.stop_reason(set(), 21.9) is None
    assert clock.stop_reason(set(), 22) == "no partition assigned for 20s"
