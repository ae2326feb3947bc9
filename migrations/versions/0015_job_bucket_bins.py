"""job_bucket_bins: per-minute DDSketch bins of the jobs' quantile metrics

One row per (job, metric, group, bucket, bin): how many scored values of a metric read by
quantile (`quantiles=True` in the registry: `latency_ms`) fell in that bin of DDSketch's
logarithmic mapping (`evaluators.quantiles`, relative accuracy 1%) in that minute. Counts
add, so a window's bins are the sums of its minutes' and its p50/p95/p99 come from them
(issue 31). Rows change with the bucket sums, in the transaction that stores a trace's
outcomes; a row whose count reaches 0 is deleted. A job that has bucket sums of such a
metric but no bins (the upgrade to this revision) rebuilds both from `job_outcomes` on its
first run (`collector.jobs.recording.cursor.TraceCursor`).

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "job_bucket_bins",
        sa.Column("job", sa.String(64), nullable=False),
        sa.Column("bucket", sa.BigInteger(), nullable=False),
        sa.Column("metric", sa.String(128), nullable=False),
        sa.Column("grp", sa.String(512), nullable=False),
        sa.Column("bin", sa.Integer(), nullable=False),
        sa.Column("n", sa.BigInteger(), server_default="0", nullable=False),
        sa.PrimaryKeyConstraint("job", "bucket", "metric", "grp", "bin"),
    )


def downgrade() -> None:
    op.drop_table("job_bucket_bins")
