"""kafka-python's own noise stays out of an INFO log: its INFO lines, and its warning that a
network-loop step waited (for the GIL, in ragpulse) over 0.1 s."""

from __future__ import annotations

import logging

import pytest

from collector.ingest.kafka import quiet_client_logs


@pytest.fixture
def restore_levels() -> object:
    root, kafka = logging.getLogger(), logging.getLogger("kafka")
    saved = root.level, kafka.level
    yield None
    root.setLevel(saved[0])
    kafka.setLevel(saved[1])


@pytest.mark.usefixtures("restore_levels")
def test_slow_step_warnings_and_info_lines_stay_out_of_info_logs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logging.getLogger().setLevel(logging.INFO)
    quiet_client_logs()
    with caplog.at_level(logging.INFO):
        selector = logging.getLogger("kafka.net.selector")
        selector.warning(
            "Task %r ran for %.3fs (>%.3fs threshold). It is blocking the event loop -- x",
            "t",
            0.2,
            0.1,
        )
        logging.getLogger("kafka.conn").info("connecting to node 1")
        logging.getLogger("kafka.net.manager").error("Connection failed")
    assert [r.getMessage() for r in caplog.records] == ["Connection failed"]
