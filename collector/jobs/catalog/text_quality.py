"""Tier 2/3 text comparison: ROUGE, BLEU and semantic similarity where a reference exists."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select

from collector.jobs.run.definition import JobDefinition
from collector.settings import Settings
from collector.store.models import Trace

NAME = "text_quality"
METRICS = ("rouge1_f", "rouge2_f", "rougeL_f", "bleu", "semantic_similarity")


def with_reference(query: Select[Any]) -> Select[Any]:
    return query.where(Trace.reference.is_not(None), Trace.answer.is_not(None))


def definition(settings: Settings) -> JobDefinition:
    return JobDefinition(
        name=NAME,
        metrics=METRICS,
        description="ROUGE, BLEU and semantic similarity of answers to references",
        candidates=with_reference,
    )
