"""job_buckets: per-minute sufficient statistics of the jobs' per-trace outcomes

One row per (job, metric, group, bucket, outcome): for the scored values (`outcome` "")
their count, sum, sum of squares, count of positive values and the sums on the log scale
(latencies); for outcomes skipped or failed for one reason (`outcome` "skipped:<reason>"
/ "error:<type>") their count. Every column is a sum, so a row is updated by adding.
The windows and detectors of a job are sums of these rows, so a jobs worker no longer
holds a row per trace (issue 31). The metric "" counts the traces of a group (what label
folding ranks values by). Rows only change by adding a trace's contribution or moving it
(old out, new in), in the transaction that stores the trace's outcomes; a job that has
outcomes but no buckets (the upgrade to this revision) builds them from `job_outcomes` on
its first run (`collector.jobs.recording.cursor.TraceCursor`).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26 15:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "job_buckets",
        sa.Column("job", sa.String(64), nullable=False),
        sa.Column("metric", sa.String(128), nullable=False),
        sa.Column("grp", sa.String(512), nullable=False),
        sa.Column("bucket", sa.BigInteger(), nullable=False),
        sa.Column("outcome", sa.String(300), nullable=False),
        sa.Column("n", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("total", sa.Float(), server_default="0", nullable=False),
        sa.Column("squares", sa.Float(), server_default="0", nullable=False),
        sa.Column("positives", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("log_total", sa.Float(), server_default="0", nullable=False),
        sa.Column("log_squares", sa.Float(), server_default="0", nullable=False),
        sa.PrimaryKeyConstraint("job", "bucket", "metric", "grp", "outcome"),
    )


def downgrade() -> None:
    op.drop_table("job_buckets")
