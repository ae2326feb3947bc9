"""Tiers 2/3 with the LLM judge: faithfulness (statement share and single rating),
relevance, context metrics, E2E score.

Over judge-sampled traces, at most `scheduler.judge_traces_per_run` new traces a run (the
judge's own call and spend budgets apply on top). Without a judge the run is recorded as
skipped with the reason, in `metric_results` and `job_state`.
"""

from __future__ import annotations

from collector.jobs.run.definition import JobDefinition
from collector.jobs.traces.candidates import sampled_for
from collector.settings import Settings

NAME = "rag_quality"
METRICS = (
    "faithfulness",
    "faithfulness_rating",
    "answer_relevance",
    "response_relevancy",
    "context_relevance",
    "context_precision",
    "context_recall",
    "context_entity_recall",
    "noise_sensitivity_relevant",
    "noise_sensitivity_irrelevant",
    "e2e_score",
)


def definition(settings: Settings) -> JobDefinition:
    return JobDefinition(
        name=NAME,
        metrics=METRICS,
        description="LLM-judge metrics over judge-sampled traces",
        candidates=sampled_for("judge"),
        uses_judge=True,
        max_new_per_run=settings.scheduler.judge_traces_per_run,
    )
