"""PostgreSQL: traces and job_outcomes range-partitioned by day; trace_keys keeps ids unique

Why: retention by dropping whole daily partitions (no long DELETE, no bloat) and jobs whose
time-bounded queries read only their window's partitions (`collector/store/partitions.py`).

Layout on PostgreSQL:
- `traces` PARTITION BY RANGE (timestamp): primary key (id, timestamp), unique
  (trace_id, timestamp), the timestamp and updated_at indexes per partition;
- `job_outcomes` PARTITION BY RANGE (ts): primary key (id, ts), unique (job, trace_id, ts);
- a partition per UTC day (`<table>_pYYYYMMDD`) from the first day holding data (at
  most `BACKFILL_DAYS` back) to `AHEAD_DAYS` after today, and a DEFAULT partition for
  everything else; the service keeps making the coming days' partitions;
- `trace_keys` (trace_id primary key, the UTC day of the trace's partition; unpartitioned):
  PostgreSQL cannot enforce a unique index without the partition key, so this narrow
  table holds each stored trace id once; retention deletes a dropped day's keys by `day`.
  A BEFORE INSERT trigger on `traces` claims the row's key (`INSERT ... ON CONFLICT DO
  NOTHING`) and skips the row when the key is taken — for every writer (COPY, INSERT,
  the ORM), exactly what the unique index on `trace_id` did: a concurrent writer of the
  same id waits for the first transaction, then does not store it. A BEFORE DELETE
  trigger releases the key; a row moving to another day's partition (an OTLP trace whose
  timestamp changed) is deleted and inserted by PostgreSQL, so its key is released and
  claimed again within the statement.

The tables are converted in place: the old table is renamed, the partitioned one created
with the same columns (defaults, lz4 compression and the id sequence included), rows
copied, the old table dropped. It rewrites both tables: plan for the time of a full copy
(about a minute per few million traces). SQLite keeps the simple layout: nothing to do.
Downgrade copies the rows back into plain tables.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta

from alembic import op
from sqlalchemy import text

from collector.store import partitions

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

AHEAD_DAYS = 7
BACKFILL_DAYS = 400
"""Days with data older than this stay in the default partition (retention deletes them)."""

# table -> (partition key, (unique name, columns), indexes, the plain table's unique)
_TABLES = {
    "traces": (
        '"timestamp"',
        ("uq_traces_trace_id_ts", 'trace_id, "timestamp"'),
        (("ix_traces_timestamp", '"timestamp"'), ("ix_traces_updated_at", "updated_at")),
        ("traces_trace_id_key", "trace_id"),
    ),
    "job_outcomes": (
        "ts",
        ("uq_job_outcomes_job_trace_ts", "job, trace_id, ts"),
        (
            ("ix_job_outcomes_job_ts", "job, ts"),
            ("ix_job_outcomes_job_updated", "job, trace_updated_at"),
        ),
        ("uq_job_outcomes_job_trace", "job, trace_id"),
    ),
}

_TRIGGERS = """
CREATE FUNCTION ragpulse_claim_trace_key() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    claimed integer;
BEGIN
    INSERT INTO trace_keys (trace_id, day)
    VALUES (NEW.trace_id, CAST(NEW."timestamp" AT TIME ZONE 'UTC' AS date))
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS claimed = ROW_COUNT;
    IF claimed = 0 THEN
        RETURN NULL;  -- the id is stored already: skip the row
    END IF;
    RETURN NEW;
END $$;
CREATE FUNCTION ragpulse_release_trace_key() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM trace_keys WHERE trace_id = OLD.trace_id;
    RETURN OLD;
END $$;
CREATE TRIGGER ragpulse_claim_trace_key BEFORE INSERT ON traces
    FOR EACH ROW EXECUTE FUNCTION ragpulse_claim_trace_key();
CREATE TRIGGER ragpulse_release_trace_key BEFORE DELETE ON traces
    FOR EACH ROW EXECUTE FUNCTION ragpulse_release_trace_key();
"""


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    op.execute(
        "CREATE TABLE trace_keys (trace_id VARCHAR(128) NOT NULL PRIMARY KEY, day DATE NOT NULL)"
    )
    op.execute(
        "INSERT INTO trace_keys (trace_id, day) "
        "SELECT trace_id, CAST(timestamp AT TIME ZONE 'UTC' AS date) FROM traces"
    )
    op.execute("CREATE INDEX ix_trace_keys_day ON trace_keys (day)")
    today = datetime.now(UTC).date()
    for table, (key, unique, indexes, plain_unique) in _TABLES.items():
        old = f"{table}_unpartitioned"
        op.execute(f"ALTER TABLE {table} RENAME TO {old}")
        op.execute(f"ALTER TABLE {old} DROP CONSTRAINT {table}_pkey")
        op.execute(f"ALTER TABLE {old} DROP CONSTRAINT {plain_unique[0]}")
        for name, _ in indexes:
            op.execute(f"DROP INDEX {name}")
        op.execute(
            f"CREATE TABLE {table} (LIKE {old} INCLUDING DEFAULTS INCLUDING COMPRESSION "
            f"INCLUDING STORAGE) PARTITION BY RANGE ({key})"
        )
        op.execute(f"ALTER TABLE {table} ADD CONSTRAINT {table}_pkey PRIMARY KEY (id, {key})")
        op.execute(f"ALTER TABLE {table} ADD CONSTRAINT {unique[0]} UNIQUE ({unique[1]})")
        for name, columns in indexes:
            op.execute(f"CREATE INDEX {name} ON {table} ({columns})")
        op.execute(f"ALTER SEQUENCE {table}_id_seq OWNED BY {table}.id")
        partitions.create_default_partition(bind, table)
        first = bind.execute(
            text(f"SELECT min({key}) FROM {old} WHERE {key} >= :since"),
            {"since": partitions.day_start(today - timedelta(days=BACKFILL_DAYS))},
        ).scalar_one()
        start: date = partitions.utc_day(first) if first is not None else today
        days = [start + timedelta(days=i) for i in range((today - start).days + AHEAD_DAYS + 1)]
        partitions.ensure_partitions(bind, days)
        op.execute(f"INSERT INTO {table} SELECT * FROM {old}")
        op.execute(f"DROP TABLE {old}")
        op.execute(f"ANALYZE {table}")
    op.execute(_TRIGGERS)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER ragpulse_claim_trace_key ON traces")
    op.execute("DROP TRIGGER ragpulse_release_trace_key ON traces")
    op.execute("DROP FUNCTION ragpulse_claim_trace_key()")
    op.execute("DROP FUNCTION ragpulse_release_trace_key()")
    for table, (_key, unique, indexes, plain_unique) in _TABLES.items():
        old = f"{table}_partitioned"
        op.execute(f"ALTER TABLE {table} RENAME TO {old}")
        op.execute(f"ALTER TABLE {old} DROP CONSTRAINT {table}_pkey")
        op.execute(f"ALTER TABLE {old} DROP CONSTRAINT {unique[0]}")
        for name, _ in indexes:
            op.execute(f"DROP INDEX {name}")
        op.execute(
            f"CREATE TABLE {table} (LIKE {old} INCLUDING DEFAULTS INCLUDING COMPRESSION "
            "INCLUDING STORAGE)"
        )
        op.execute(f"INSERT INTO {table} SELECT * FROM {old}")
        op.execute(f"ALTER TABLE {table} ADD CONSTRAINT {table}_pkey PRIMARY KEY (id)")
        op.execute(
            f"ALTER TABLE {table} ADD CONSTRAINT {plain_unique[0]} UNIQUE ({plain_unique[1]})"
        )
        for name, columns in indexes:
            op.execute(f"CREATE INDEX {name} ON {table} ({columns})")
        op.execute(f"ALTER SEQUENCE {table}_id_seq OWNED BY {table}.id")
        op.execute(f"DROP TABLE {old} CASCADE")
    op.execute("DROP TABLE trace_keys")
