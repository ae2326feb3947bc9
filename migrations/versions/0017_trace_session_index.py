"""traces: an index on (session_id, timestamp) where a session is set

Why: the sessions job (issue 42) reads the turns of the conversations that changed or fell
idle, by their session id, every run; without an index each such read scans the look-back's
traces. Partial (`session_id IS NOT NULL`), so traces without a session cost nothing to
insert; rev. 0005 had dropped the plain index when no query used it. On PostgreSQL the
index is made on the partitioned table, so every partition (and those made later) has it.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-04 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_WHERE = sa.text("session_id IS NOT NULL")


def upgrade() -> None:
    op.create_index(
        "ix_traces_session_ts",
        "traces",
        ["session_id", "timestamp"],
        postgresql_where=_WHERE,
        sqlite_where=_WHERE,
    )


def downgrade() -> None:
    op.drop_index("ix_traces_session_ts", table_name="traces")
