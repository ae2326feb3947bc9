"""traces.contexts as json (not jsonb) on PostgreSQL, lz4-compressed; no session_id index

The retrieved contexts are the biggest part of a trace (~8 KB), written once and always
read back whole; nothing queries inside them. Storing them as `json` keeps the text as
sent (validated, not converted to jsonb's binary form), which cut the server's CPU per
ingested trace by about a third. The type change rewrites the column, so lz4 compression
is set again. SQLite is unchanged (JSON is text there). The session_id index is dropped:
no query looks traces up by session (the UX job filters a timestamp range), and every
ingested trace paid for maintaining it.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24 09:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _set_type(sql_type: str) -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        f"ALTER TABLE traces ALTER COLUMN contexts TYPE {sql_type} USING contexts::{sql_type}"
    )
    # dynamic SQL so an old or lz4-less server raises at run time, where it is caught
    op.execute(
        "DO $$ BEGIN EXECUTE 'ALTER TABLE traces ALTER COLUMN contexts SET COMPRESSION lz4'; "
        "EXCEPTION WHEN feature_not_supported OR syntax_error OR undefined_object "
        "THEN NULL; END $$"
    )


def upgrade() -> None:
    _set_type("json")
    with op.batch_alter_table("traces", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_traces_session_id"))


def downgrade() -> None:
    with op.batch_alter_table("traces", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_traces_session_id"), ["session_id"], unique=False)
    _set_type("jsonb")
