"""The overview's retrieval section: is the right context found?

Seed 004's Tier 1 benchmark on real users' questions (hit rate, MRR, NDCG, recall and
precision at k), retrieval health on every trace (the share that retrieved nothing) and
Tier 0, the embeddings the retrieval rests on (clusters, their cohesion and separation).
One row per job with every metric it computes, read from the registry.
"""

from __future__ import annotations

from collections.abc import Sequence

from dashboards.panels.layout import Section
from dashboards.panels.quality import job_rows

JOBS = ("real_users_benchmark", "retrieval_health", "embedding_quality")


def rows(scheduled: Sequence[tuple[str, str, tuple[str, ...]]]) -> list[tuple[str, Section]]:
    return job_rows(scheduled, JOBS)
