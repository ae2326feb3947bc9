"""Tier 0: how well question embeddings cluster by their ground-truth document.

Dataset metrics (silhouette is quadratic), so they run on the most recent
`dataset_cap` benchmark-sampled traces (those carry ground truth) of each window.
"""

from __future__ import annotations

from collector.jobs.run.definition import JobDefinition
from collector.jobs.traces.candidates import sampled_for
from collector.settings import Settings

NAME = "embedding_quality"
METRICS = (
    "silhouette",
    "intra_cluster_similarity",
    "inter_cluster_distance",
    "n_clusters",
    "total_pairs",
)


def definition(settings: Settings) -> JobDefinition:
    return JobDefinition(
        name=NAME,
        metrics=METRICS,
        description="silhouette and cluster similarities of questions by ground-truth document",
        candidates=sampled_for("real_users_benchmark"),
        dataset_cap=1000,
    )
