"""Kafka plumbing: the embedded broker, a producer for sample traffic, the trace consumer."""

from __future__ import annotations

import logging


def quiet_client_logs() -> None:
    """kafka-python logs every connection and rebalance at INFO: keep it to warnings unless
    the root logger is at DEBUG (commands call this; library code never configures logs)."""
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        logging.getLogger("kafka").setLevel(logging.WARNING)
