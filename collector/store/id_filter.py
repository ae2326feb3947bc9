"""`column IN (ids)` for the thousands of ids of one ingested batch, cheap on each back end.

PostgreSQL gets one text-array parameter (`column = ANY(:ids)`): SQLAlchemy's expanding
IN list builds, caches and re-parses a statement with a placeholder per id, which for a
batch of 5,000 traces cost more client CPU than the query itself (~40 ms a batch, ~8 µs a
trace). A backlog's rows are fetched by integer id likewise (`joined_ids`). SQLite keeps
the IN list (it has no arrays).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import BigInteger, ColumnElement, Select, String, any_, bindparam, func
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session

from collector.store.bulk import is_postgresql


def among(session: Session, column: Any, ids: Collection[str]) -> ColumnElement[bool]:
    """A WHERE clause: `column` (a string column) is one of `ids`."""
    if is_postgresql(session):
        values = bindparam("ids", value=list(ids), type_=postgresql.ARRAY(String), unique=True)
        match: ColumnElement[bool] = column == any_(values)
        return match
    in_list: ColumnElement[bool] = column.in_(list(ids))
    return in_list


def joined_ids(
    session: Session, query: Select[Any], column: Any, ids: Sequence[int]
) -> Select[Any]:
    """`query` narrowed to the rows whose `column` (an integer id) is one of `ids`:
    PostgreSQL joins it with `unnest(:ids)` (run it `unprepared`), SQLite gets IN."""
    if not is_postgresql(session):
        return query.where(column.in_(list(ids)))
    values = bindparam("ids", value=list(ids), type_=postgresql.ARRAY(BigInteger), unique=True)
    wanted = func.unnest(values).table_valued("id").render_derived(name="wanted")
    return query.join(wanted, column == wanted.c.id)


@contextmanager
def unprepared(session: Session) -> Iterator[None]:
    """Statements run inside are planned for their parameters every time (psycopg does
    not prepare them). psycopg prepares a statement run a 6th time, and PostgreSQL then
    may keep a generic plan, blind to the size of an id array: for a backlog chunk's
    20,000 ids joined with the rows of their time range it compared every row with the
    whole array (1.4 s a chunk, against ~30 ms planned for the array at hand)."""
    raw: Any = session.connection().connection.driver_connection
    before = getattr(raw, "prepare_threshold", None)
    if before is None:
        yield
        return
    raw.prepare_threshold = None
    try:
        yield
    finally:
        raw.prepare_threshold = before
