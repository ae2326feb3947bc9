"""The overview's generation section: is the answer faithful, relevant and right?

The LLM-judge metrics of seed 004's Tiers 2 and 3 (faithfulness, answer and context
relevance, the RAGAS context and noise metrics, the end-to-end score) and the answers
against references (ROUGE, BLEU, semantic similarity). One row per job with every metric
it computes, read from the registry.
"""

from __future__ import annotations

from collections.abc import Sequence

from dashboards.panels.layout import Section
from dashboards.panels.quality import job_rows

JOBS = ("rag_quality", "text_quality")


def rows(scheduled: Sequence[tuple[str, str, tuple[str, ...]]]) -> list[tuple[str, Section]]:
    return job_rows(scheduled, JOBS)
