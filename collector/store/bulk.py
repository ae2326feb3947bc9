"""`INSERT ... ON CONFLICT DO NOTHING RETURNING` for many rows, fast on each back end.

PostgreSQL: one prepared statement run with psycopg's `executemany(..., returning=True)`,
which pipelines every row in one round trip and parses the SQL once (SQLAlchemy's
multi-row VALUES would build and re-parse a new statement with 30,000 placeholders per
batch), JSON encoded with orjson. SQLite: SQLAlchemy's multi-row insert.
Runs on the session's connection, inside its transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import orjson
import psycopg
from psycopg.types.json import Json, Jsonb
from sqlalchemy import JSON, Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session


def is_postgresql(session: Session) -> bool:
    return session.get_bind().dialect.name == "postgresql"


def upsert_insert(session: Session, table: Table) -> Any:
    """The back end's `INSERT` construct that knows `ON CONFLICT` (PostgreSQL or SQLite)."""
    if is_postgresql(session):
        return postgresql.insert(table)
    return sqlite.insert(table)


def insert_ignore_returning(
    session: Session,
    table: Table,
    rows: Sequence[dict[str, Any]],
    conflict: Sequence[str],
    returning: Sequence[str],
) -> list[tuple[Any, ...]]:
    """Insert `rows` (all with the same keys), skipping conflicts; return the new rows' keys."""
    if not rows:
        return []
    columns = tuple(rows[0])
    if is_postgresql(session):
        return _pg_insert(session, table, rows, columns, tuple(conflict), tuple(returning))
    stmt = (
        sqlite.insert(table)
        .on_conflict_do_nothing(index_elements=list(conflict))
        .returning(*(table.c[name] for name in returning))
    )
    return [tuple(r) for r in session.execute(stmt, list(rows)).all()]


def _pg_insert(
    session: Session,
    table: Table,
    rows: Sequence[dict[str, Any]],
    columns: tuple[str, ...],
    conflict: tuple[str, ...],
    returning: tuple[str, ...],
) -> list[tuple[Any, ...]]:
    sql = _pg_statement(table, columns, conflict, returning)
    wrappers = _json_wrappers(table, columns)
    dumps = orjson.dumps
    params = []
    for row in rows:
        values = [row[c] for c in columns]
        for i, wrap in wrappers:
            if values[i] is not None:
                values[i] = wrap(values[i], dumps)
        params.append(values)
    driver = _driver(session)
    out: list[tuple[Any, ...]] = []
    try:
        with driver.cursor() as cur:
            cur.executemany(sql, params, returning=True)
            while True:
                out.extend(cur.fetchall())
                if not cur.nextset():
                    break
    except psycopg.Error as exc:
        # callers (the consumer's retry loop) handle SQLAlchemy's exception types
        raise DBAPIError.instance(sql, None, exc, psycopg.Error) from exc
    return out


COPY_CHUNK_BYTES = 256 * 1024


def copy_new_rows(
    session: Session, table: Table, columns: Sequence[str], lines: Iterable[bytes]
) -> bool:
    """PostgreSQL: `COPY` rows that should all be new, given as text-format lines
    (`collector.store.copy_text`) of `columns`, consumed lazily (a generator lets the server
    insert the first rows while the client still formats the rest).

    Much cheaper than INSERT for the server (no per-row executor, plan or conflict check
    beyond the unique indexes) and for the client (no parameter binding). Runs inside a
    savepoint: if any row is not stored — it violates a unique constraint, or a trigger
    skipped it (`traces` on PostgreSQL skips a row whose trace id is stored, rev. 0011):
    a concurrent writer stored it after the caller's check — everything this call wrote
    is rolled back and False is returned, so the caller can fall back to
    `insert_ignore_returning`. Other errors propagate as `DBAPIError`.
    """
    driver = _driver(session)
    sql = _copy_statement(table, tuple(columns))
    try:
        with driver.cursor() as cur:
            cur.execute("SAVEPOINT ragpulse_copy")
            sent = 0
            try:
                with cur.copy(sql) as copy:
                    # stream in chunks: the server inserts one while the next is built
                    chunk: list[bytes] = []
                    size = 0
                    for line in lines:
                        chunk.append(line)
                        sent += 1
                        size += len(line)
                        if size >= COPY_CHUNK_BYTES:
                            copy.write(b"".join(chunk))
                            chunk.clear()
                            size = 0
                    if chunk:
                        copy.write(b"".join(chunk))
                stored = cur.rowcount
            except psycopg.errors.UniqueViolation:
                stored = -1
            if stored != sent:
                cur.execute("ROLLBACK TO SAVEPOINT ragpulse_copy")
                cur.execute("RELEASE SAVEPOINT ragpulse_copy")
                return False
            cur.execute("RELEASE SAVEPOINT ragpulse_copy")
    except psycopg.Error as exc:
        raise DBAPIError.instance(sql, None, exc, psycopg.Error) from exc
    return True


def _driver(session: Session) -> psycopg.Connection[Any]:
    driver = session.connection().connection.driver_connection
    if driver is None:
        raise RuntimeError("the session's connection has no driver connection")
    return driver  # type: ignore[no-any-return]


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@lru_cache(maxsize=64)
def _json_wrappers(
    table: Table, columns: tuple[str, ...]
) -> list[tuple[int, type[Json] | type[Jsonb]]]:
    """(position, psycopg wrapper) of the JSON columns: Jsonb for jsonb, Json for json."""
    dialect = postgresql.dialect()  # type: ignore[no-untyped-call]
    out: list[tuple[int, type[Json] | type[Jsonb]]] = []
    for i, name in enumerate(columns):
        column_type = table.c[name].type
        if isinstance(column_type, JSON):
            jsonb = isinstance(column_type.dialect_impl(dialect), postgresql.JSONB)
            out.append((i, Jsonb if jsonb else Json))
    return out


@lru_cache(maxsize=64)
def _copy_statement(table: Table, columns: tuple[str, ...]) -> str:
    return f"COPY {_quote(table.name)} ({', '.join(_quote(c) for c in columns)}) FROM STDIN"


@lru_cache(maxsize=64)
def _pg_statement(
    table: Table,
    columns: tuple[str, ...],
    conflict: tuple[str, ...],
    returning: tuple[str, ...],
) -> str:
    q = _quote
    return (
        f"INSERT INTO {q(table.name)} ({', '.join(q(c) for c in columns)}) "
        f"VALUES ({', '.join(['%s'] * len(columns))}) "
        f"ON CONFLICT ({', '.join(q(c) for c in conflict)}) DO NOTHING "
        f"RETURNING {', '.join(q(c) for c in returning)}"
    )
