"""job_outcomes.slices and traces.evaluations

`job_outcomes.slices` holds the trace's slice dimensions (tenant, model, version,
language, ... as configured in `slices.dimensions`, values cleaned and bounded) so that
`ragpulse explain` can attribute a metric's change to slices without re-reading traces.
`traces.evaluations` holds evaluation results the application itself emitted as
OpenTelemetry `gen_ai.evaluation.result` events or attributes: evaluation name ->
{"score": float | null, "label": str | null, "explanation": str | null}; they become the
`external:<name>` series. Both are nullable: no existing row changes.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25 12:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> Any:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("job_outcomes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("slices", _json(), nullable=True))
    with op.batch_alter_table("traces", schema=None) as batch_op:
        batch_op.add_column(sa.Column("evaluations", _json(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("traces", schema=None) as batch_op:
        batch_op.drop_column("evaluations")
    with op.batch_alter_table("job_outcomes", schema=None) as batch_op:
        batch_op.drop_column("slices")
