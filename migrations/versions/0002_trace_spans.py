"""traces.spans: per-span merge state of OTLP traces; lz4 TOAST compression on PostgreSQL

The large trace columns (contexts, texts, span state) are compressed with lz4 instead of
pglz where the server supports it (PostgreSQL 14+ built with lz4): at thousands of ~8 KB
traces per second pglz costs the server about a third of its insert time.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 08:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("traces", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "spans",
                sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
                nullable=True,
            )
        )

    if op.get_bind().dialect.name == "postgresql":
        statements = " ".join(
            f"EXECUTE 'ALTER TABLE traces ALTER COLUMN {column} SET COMPRESSION lz4';"
            for column in _COMPRESSED
        )
        # dynamic SQL so an old or lz4-less server raises at run time, where it is caught
        op.execute(
            f"DO $$ BEGIN {statements} "
            "EXCEPTION WHEN feature_not_supported OR syntax_error OR undefined_object "
            "THEN NULL; END $$"
        )


_COMPRESSED = ("question", "answer", "contexts", "reference", "metadata", "spans")


def downgrade() -> None:
    with op.batch_alter_table("traces", schema=None) as batch_op:
        batch_op.drop_column("spans")
