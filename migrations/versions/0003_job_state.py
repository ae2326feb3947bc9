"""job_outcomes and job_state: incremental state of the scheduled jobs

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 09:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "job_outcomes",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("job", sa.String(length=64), nullable=False),
        sa.Column("trace_id", sa.String(length=128), nullable=False),
        sa.Column("trace_updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ts", sa.DateTime(timezone=True), nullable=False),
        sa.Column("groups", JSON, nullable=True),
        sa.Column("outcomes", JSON, nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("job", "trace_id", name="uq_job_outcomes_job_trace"),
    )
    with op.batch_alter_table("job_outcomes", schema=None) as batch_op:
        batch_op.create_index("ix_job_outcomes_job_ts", ["job", "ts"], unique=False)
        batch_op.create_index(
            "ix_job_outcomes_job_updated", ["job", "trace_updated_at"], unique=False
        )

    op.create_table(
        "job_state",
        sa.Column("job", sa.String(length=64), nullable=False),
        sa.Column("watermark", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_run_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_status", sa.String(length=16), nullable=True),
        sa.Column("last_message", sa.Text(), nullable=True),
        sa.Column("last_duration_s", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("job"),
    )


def downgrade() -> None:
    op.drop_table("job_state")
    with op.batch_alter_table("job_outcomes", schema=None) as batch_op:
        batch_op.drop_index("ix_job_outcomes_job_updated")
        batch_op.drop_index("ix_job_outcomes_job_ts")
    op.drop_table("job_outcomes")
