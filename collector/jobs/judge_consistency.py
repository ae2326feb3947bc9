"""Tier Judge: re-judge a small recent sample; consistency, error rate and latency."""

from __future__ import annotations

from collector.jobs.engine import JobDefinition
from collector.jobs.real_users_benchmark import sampled_for
from collector.settings import Settings

NAME = "judge_consistency"
METRICS = ("judge_consistency", "judge_error_rate", "judge_latency_ms_avg")


def definition(settings: Settings) -> JobDefinition:
    return JobDefinition(
        name=NAME,
        metrics=METRICS,
        description="consistency of our LLM judge on repeated judgments",
        candidates=sampled_for("judge"),
        uses_judge=True,
        dataset_cap=settings.scheduler.consistency_sample,
        dataset_groups=False,
    )
