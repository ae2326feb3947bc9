"""Tier Judge Pipeline: the production judge's decisions against the known labels."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select

from collector.jobs.run.definition import JobDefinition
from collector.settings import Settings
from collector.store.models import Trace

NAME = "judge_pipeline"
METRICS = (
    "judge_accuracy",
    "judge_precision",
    "judge_recall",
    "judge_f1",
    "judge_latency_ms",
    "judge_decision_correct",
)


def labelled(query: Select[Any]) -> Select[Any]:
    return query.where(Trace.judge_decision.is_not(None), Trace.judge_label.is_not(None))


def definition(settings: Settings) -> JobDefinition:
    return JobDefinition(
        name=NAME,
        metrics=METRICS,
        description="accuracy, precision, recall, F1 and latency of the production judge",
        candidates=labelled,
    )
