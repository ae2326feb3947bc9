"""Typed errors of the evaluators library (retriable vs not, like kafka-python's errors)."""

from __future__ import annotations


class EvaluatorError(Exception):
    """Base class of every error raised by `evaluators`."""

    retriable = False


class UnknownMetricError(EvaluatorError, ValueError):
    """A metric name that is not registered; the message lists the known names."""
