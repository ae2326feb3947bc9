"""evaluation_events: OTLP log records carrying evaluation results, kept as received

An application's `gen_ai.evaluation.result` log records arrive on their own topic and may
come before the trace they score (or for a JSON trace, which OTLP spans never touch). Each
is kept here once (`event_hash`, so a replay adds nothing); `traces.evaluations` (rev.
0007) is recomputed from these rows and the trace's span events whenever either changes.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25 12:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "evaluation_events",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("event_hash", sa.String(64), nullable=False),
        sa.Column("trace_id", sa.String(128), nullable=False),
        sa.Column("span_id", sa.String(16), nullable=True),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("time_ns", sa.BigInteger(), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("label", sa.String(128), nullable=True),
        sa.Column("explanation", sa.Text(), nullable=True),
        sa.Column("error_type", sa.String(128), nullable=True),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("event_hash", name="uq_evaluation_events_hash"),
    )
    op.create_index("ix_evaluation_events_trace_id", "evaluation_events", ["trace_id"])


def downgrade() -> None:
    op.drop_index("ix_evaluation_events_trace_id", table_name="evaluation_events")
    op.drop_table("evaluation_events")
