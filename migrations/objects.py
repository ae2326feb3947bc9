"""Which schema objects autogenerate compares: the models describe the simple layout.

The models (`collector/store/models.py`) are the schema SQLite has. PostgreSQL differs by
design since rev. 0011 (`collector/store/partitions.py`): `traces` and `job_outcomes` are
partitioned, so their daily and default partitions are tables of their own, and their
unique constraints include the partition key; `trace_keys` exists there only. Autogenerate
(and `tests/test_store_migrations.py`) must neither drop nor re-add those, so `env.py`
passes these hooks to Alembic.
"""

from __future__ import annotations

import re
from typing import Any

_PARTITION = re.compile(r"^(traces|job_outcomes)_(p\d{8}|default)$")

PG_ONLY_TABLES = frozenset({"trace_keys"})

PG_UNIQUE = {
    "traces": (("trace_id",), ("trace_id", "timestamp")),
    "job_outcomes": (("job", "trace_id"), ("job", "trace_id", "ts")),
}
"""table -> (the columns of the models' unique constraint, those of PostgreSQL's)."""


def include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    """Leave the partitions out: the service makes them, the models know the parents."""
    return not (type_ == "table" and name is not None and _PARTITION.match(name) is not None)


def comparison_hooks(dialect: str) -> dict[str, Any]:
    """`include_name` and `include_object` for a database of `dialect` (Alembic options)."""

    def include_object(
        obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any
    ) -> bool:
        if type_ == "table":
            return dialect == "postgresql" or name not in PG_ONLY_TABLES
        if type_ == "unique_constraint" and dialect == "postgresql":
            pair = PG_UNIQUE.get(obj.table.name)
            if pair is not None:
                return tuple(c.name for c in obj.columns) not in pair
        return True

    return {"include_name": include_name, "include_object": include_object}
