"""embeddings: persistent cache of text embeddings for the scheduled jobs

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24 08:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "embeddings",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("model", sa.String(length=256), nullable=False),
        sa.Column("text_hash", sa.String(length=64), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("model", "text_hash", name="uq_embeddings_model_text"),
    )
    with op.batch_alter_table("embeddings", schema=None) as batch_op:
        batch_op.create_index("ix_embeddings_created_at", ["created_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("embeddings", schema=None) as batch_op:
        batch_op.drop_index("ix_embeddings_created_at")
    op.drop_table("embeddings")
