"""traces.not_request: OTLP traces that are no user request, and why

Index building, batch embedding and health checks reach the OTLP topic like any trace.
Their rows are kept (a trace's spans arrive in fragments, and a later one may still make it
a request) but flagged with the reason (`embedding`, `no_model_call`, `unknown_spans`:
`collector/ingest/decode/requests.py`); NULL is a request. The jobs and the sampler skip
flagged rows. Nullable and without a default: adding it rewrites no row (on PostgreSQL the
partitioned table's partitions get the column with it).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("traces", sa.Column("not_request", sa.String(32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("traces", schema=None) as batch_op:
        batch_op.drop_column("not_request")
