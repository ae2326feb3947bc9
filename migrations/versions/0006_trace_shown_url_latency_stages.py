"""traces.shown_url and traces.latency_stages

`shown_url` holds the url(s) of the document(s) shown to the user in the real dialog
(seed 004 §7.3), a JSON list of strings: the real-users benchmark's ground truth when a
trace has no relevance, relevant_ids or feedback. `latency_stages` keeps per-stage
latencies (`{"retrieval": 172, "generation": 2969}`) when a trace sends `latency_ms` as an
object; `latency_ms` then holds the total. Both are nullable: no existing row changes.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 09:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> Any:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("traces", schema=None) as batch_op:
        batch_op.add_column(sa.Column("latency_stages", _json(), nullable=True))
        batch_op.add_column(sa.Column("shown_url", _json(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("traces", schema=None) as batch_op:
        batch_op.drop_column("shown_url")
        batch_op.drop_column("latency_stages")
