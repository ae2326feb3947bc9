"""job_shards and job_workers: the evaluation jobs' work split across worker processes

A job's trace space is cut into `scheduler.shards` shards (a hash of the trace id). A
worker leases a fair share of them (`lease_until`, renewed while it works), evaluates
their pending traces and commits the outcomes together with the shard's `watermark` and
`checked_at`, then releases them; a dead worker's leases expire and another takes the
shards over. `job_workers` holds which workers run a job (until `alive_until`), so each
claims about shards / live workers. `stores` counts the batches of outcomes stored from
a shard; `job_state.aggregated_stores` is their sum as the job's last aggregation read it,
so a worker knows whether there is anything new to aggregate. See
`collector/jobs/sharding/leases.py` and `collector/jobs/sharding/sharded.py`.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "job_shards",
        sa.Column("job", sa.String(64), nullable=False),
        sa.Column("shard", sa.Integer(), nullable=False),
        sa.Column("owner", sa.String(128), nullable=True),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("checked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("watermark", sa.DateTime(timezone=True), nullable=True),
        sa.Column("stores", sa.BigInteger(), server_default="0", nullable=False),
        sa.PrimaryKeyConstraint("job", "shard"),
    )
    op.add_column("job_state", sa.Column("aggregated_stores", sa.BigInteger(), nullable=True))
    op.create_table(
        "job_workers",
        sa.Column("job", sa.String(64), nullable=False),
        sa.Column("worker", sa.String(128), nullable=False),
        sa.Column("alive_until", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("job", "worker"),
    )


def downgrade() -> None:
    with op.batch_alter_table("job_state") as batch_op:
        batch_op.drop_column("aggregated_stores")
    op.drop_table("job_workers")
    op.drop_table("job_shards")
