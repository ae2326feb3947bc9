"""slo_events and slo_event_counts: quality SLO events counted once per trace

`slo_events` holds one row per (slo, trace): its primary key is what makes recording an
event idempotent (a re-run job or a restarted worker inserts nothing new).
`slo_event_counts` holds the counters `ragpulse_slo_events_total` exposes, per SLO, tenant
and outcome; they only grow, so they survive restarts and the pruning of old events.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "slo_events",
        sa.Column("slo", sa.String(64), nullable=False),
        sa.Column("trace_id", sa.String(128), nullable=False),
        sa.Column("tenant", sa.String(128), nullable=False),
        sa.Column("good", sa.Boolean(), nullable=False),
        sa.Column("ts", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("slo", "trace_id"),
    )
    op.create_index("ix_slo_events_ts", "slo_events", ["ts"])
    op.create_table(
        "slo_event_counts",
        sa.Column("slo", sa.String(64), nullable=False),
        sa.Column("tenant", sa.String(128), nullable=False),
        sa.Column("outcome", sa.String(8), nullable=False),
        sa.Column("count", sa.BigInteger(), server_default="0", nullable=False),
        sa.PrimaryKeyConstraint("slo", "tenant", "outcome"),
    )


def downgrade() -> None:
    op.drop_table("slo_event_counts")
    op.drop_index("ix_slo_events_ts", table_name="slo_events")
    op.drop_table("slo_events")
