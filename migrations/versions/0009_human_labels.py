"""human_labels: humans' values of judge metrics, once per (trace, metric, labeler)

Labels come on a trace or, usually later, on a feedback event (`labels`: metric -> value
on its scale, optional `labeler`). A label may arrive before its trace; a newer label of
the same labeler replaces the older one. `labeler` is "" when none was given, so that the
unique key holds (NULLs never conflict).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25 12:45:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "human_labels",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("trace_id", sa.String(128), nullable=False),
        sa.Column("metric", sa.String(128), nullable=False),
        sa.Column("labeler", sa.String(128), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Column("timestamp", sa.DateTime(timezone=True), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("trace_id", "metric", "labeler", name="uq_human_labels_key"),
    )
    op.create_index("ix_human_labels_trace_id", "human_labels", ["trace_id"])


def downgrade() -> None:
    op.drop_index("ix_human_labels_trace_id", table_name="human_labels")
    op.drop_table("human_labels")
