"""Engine and session factory for the configured database (created on demand, never at import)."""

from __future__ import annotations

import json
from typing import Any

import orjson
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker


def make_engine(url: str, *, echo: bool = False, pool_size: int = 5) -> Engine:
    """Create an engine; SQLite gets WAL and a busy timeout so readers never block the writer."""
    # orjson parses the JSON columns (contexts, tags, stored outcomes) ~5x faster than the
    # standard library; what the database holds was validated JSON when it was written.
    kwargs: dict[str, Any] = {
        "echo": echo,
        "future": True,
        "json_deserializer": orjson.loads,
        "json_serializer": dumps_json,
    }
    if url.startswith("sqlite"):
        kwargs["connect_args"] = {"timeout": 30, "check_same_thread": False}
    else:
        kwargs["pool_size"] = pool_size
        kwargs["pool_pre_ping"] = True
    engine = create_engine(url, **kwargs)
    if url.startswith("sqlite"):
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def dumps_json(value: Any) -> str:
    """JSON text for a JSON column, the same on every back end: a non-finite float becomes
    null (the standard library would write a bare `NaN`, which PostgreSQL refuses and no
    JSON reader accepts back), keys that are not strings become strings."""
    try:
        return orjson.dumps(value, option=_JSON_OPTIONS).decode()
    except TypeError:  # a type orjson does not know, or nesting past its 254 levels
        return json.dumps(value, allow_nan=False, ensure_ascii=False)


_JSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False, future=True)
