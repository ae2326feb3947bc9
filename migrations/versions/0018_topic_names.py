"""topics.name: a topic's short name written by the LLM judge (issue 41)

One JSON object per named topic: `{"names": {language: name}, "model": judge model,
"prompt": prompt version}`; NULL until the `topics` job has named it (only with a judge
configured, at most `topics.names_per_run` topics a run). A topic kept across
re-clusterings keeps its name, so the judge is asked once per topic.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-04 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("topics") as batch:
        batch.add_column(sa.Column("name", JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("topics") as batch:
        batch.drop_column("name")
