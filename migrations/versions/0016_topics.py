"""topics and trace_topics: what users ask about, and each trace's topic (issue 41)

`topics` holds one row per topic ever found: its id is kept across re-clusterings (the
job matches new clusters to the previous topics) and never given to another topic, so a
retired topic keeps its row with `active` false. The centroid is float32 bytes like
`embeddings.vector`; `model`, `method` and `params` sign the clustering that found it.
`trace_topics` holds one row per trace that has an embedding: its nearest active topic
(NULL when every centroid is too far) and that cosine. No foreign key to `traces`, which
PostgreSQL partitions by time; a trace's row goes once the job's look-back and the
results' retention have passed it.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-03 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "topics",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("keywords", JSON, nullable=False),
        sa.Column("examples", JSON, nullable=False),
        sa.Column("centroid", sa.LargeBinary(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("model", sa.String(256), nullable=False),
        sa.Column("method", sa.String(64), nullable=False),
        sa.Column("params", JSON, nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "trace_topics",
        sa.Column("trace_id", sa.String(128), nullable=False),
        sa.Column("topic_id", sa.Integer(), nullable=True),
        sa.Column("similarity", sa.Float(), nullable=False),
        sa.Column("assigned_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("trace_id"),
    )
    op.create_index("ix_trace_topics_topic_id", "trace_topics", ["topic_id"])
    op.create_index("ix_trace_topics_assigned_at", "trace_topics", ["assigned_at"])


def downgrade() -> None:
    op.drop_index("ix_trace_topics_assigned_at", table_name="trace_topics")
    op.drop_index("ix_trace_topics_topic_id", table_name="trace_topics")
    op.drop_table("trace_topics")
    op.drop_table("topics")
