"""Retrieval health: the share of traces whose retrieval returned nothing, over every trace.

`retrieval_empty_rate` is an operations signal beside Tier 1. Its population is every
trace of the window (not only the benchmark sample, and with or without ground truth), so
an outage shows at full resolution. A job of its own rather than part of the UX job: the
UX job deliberately never loads the retrieved contexts of the traces it scores (see
`trace_rows`), while this one loads only them, for new traces only.
"""

from __future__ import annotations

from collector.jobs.run.definition import JobDefinition
from collector.settings import Settings

NAME = "retrieval_health"
METRICS = ("retrieval_empty_rate",)


def definition(settings: Settings) -> JobDefinition:
    return JobDefinition(
        name=NAME,
        metrics=METRICS,
        description="share of traces whose retrieval returned no context (all traces)",
    )
