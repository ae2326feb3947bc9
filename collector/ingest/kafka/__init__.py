"""Kafka plumbing: the embedded broker, a producer for sample traffic, the trace consumer."""

from __future__ import annotations

import logging

SLOW_STEP = "blocking the event loop"
"""kafka-python's warning when one step of its network loop took over 0.1 s."""


class SlowStepToDebug(logging.Filter):
    """kafka-python warns when one step of its network loop runs over 0.1 s. In ragpulse
    that step waits for the GIL while this process scores traces or writes a batch on
    another thread: a note for whoever debugs the client, not news for the operator (a
    consumer that really stalls shows as lag and as `ragpulse_consumer_*`). Such records
    are shown as DEBUG, and only when DEBUG is on."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.WARNING and SLOW_STEP in record.getMessage():
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger().isEnabledFor(logging.DEBUG)
        return True


def quiet_client_logs() -> None:
    """kafka-python logs every connection and rebalance at INFO: keep it to warnings unless
    the root logger is at DEBUG, and its slow-step warnings to DEBUG (commands call this;
    library code never configures logs)."""
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        logging.getLogger("kafka").setLevel(logging.WARNING)
    selector = logging.getLogger("kafka.net.selector")
    if not any(isinstance(f, SlowStepToDebug) for f in selector.filters):
        selector.addFilter(SlowStepToDebug())
