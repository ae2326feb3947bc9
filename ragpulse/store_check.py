"""Checks of the configured database before a command uses it, as one-line `UserError`s.

`ragpulse migrate` must be able to create the database (`database_errors` turns a refused
connection, a missing PostgreSQL database or a missing SQLite directory into a sentence);
commands that read (`jobs run`) need it to exist and be migrated (`require_migrated`),
and must not create an empty SQLite file by merely connecting, as SQLite would.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError

from collector.errors import UserError, one_line


def describe(url: str) -> str:
    """The URL with its password masked, for messages."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparsable database URL>"


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite URL (relative to the working directory as SQLite opens it);
    None for other databases and in-memory or URI-style SQLite."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return None
    database = parsed.database or ""
    if database in ("", ":memory:") or database.startswith("file:"):
        return None
    return Path(database)


def unusable(url: str, exc: OperationalError) -> str:
    """One line: which database (password masked), the server's reason, and a hint."""
    reason = one_line(exc.orig if exc.orig is not None else exc)
    hint = ""
    name = make_url(url).database
    if make_url(url).get_backend_name() == "postgresql" and "does not exist" in reason:
        hint = f' (create it first, e.g. `createdb {name}` or CREATE DATABASE "{name}")'
    return f"cannot use the database {describe(url)}: {reason}{hint}"


@contextmanager
def database_errors(url: str) -> Iterator[None]:
    """Turn the database's connection and URL failures inside the block into a `UserError`
    naming the (masked) database and the server's reason, with a hint where one helps."""
    try:
        yield
    except OperationalError as exc:
        raise UserError(unusable(url, exc)) from None
    except (ArgumentError, NoSuchModuleError) as exc:
        raise UserError(f"bad database URL {describe(url)}: {one_line(exc)}") from None
    except ModuleNotFoundError as exc:
        raise UserError(
            f"the database driver {exc.name} is not installed for {describe(url)} "
            "(PostgreSQL URLs start with postgresql+psycopg://)"
        ) from None


def require_creatable(url: str) -> None:
    """For `migrate`: a SQLite file can be created only in a directory that exists."""
    path = sqlite_file(url)
    if path is not None and not path.parent.is_dir():
        raise UserError(
            f"cannot create the SQLite database {path}: the directory {path.parent} does "
            "not exist (create it, or set RAGPULSE_DATABASE__URL to another path)"
        )


def require_migrated(url: str) -> None:
    """The database exists, answers, and its schema is at the newest revision; a SQLite
    file that does not exist is reported without being created."""
    from migrations.runner import current_heads, database_heads

    path = sqlite_file(url)
    if path is not None and not path.is_file():
        raise UserError(f"there is no database at {path.resolve()} ({describe(url)}): {_remedy()}")
    with database_errors(url):
        current = database_heads(url)
    needed = set(current_heads())
    if current != needed:
        at = ", ".join(sorted(current)) or "no revision: not migrated"
        raise UserError(
            f"the database {describe(url)} is not at the schema this ragpulse needs "
            f"(at {at}; needs {', '.join(sorted(needed))}): run `ragpulse migrate`"
        )


def _remedy() -> str:
    """What to do about a missing SQLite store: the demo's, when a demo ran from here (an
    empty `migrate`d database would only hide it), else create one."""
    from ragpulse.demo.handoff import stopped_demo

    demo = stopped_demo(Path.cwd())
    if demo is not None:
        return (
            f"the demo's store is described by {demo}: pass `--config {demo}` (or start "
            "`ragpulse demo` again, whose settings commands here then use by default)"
        )
    return "run `ragpulse migrate` to create it, or set RAGPULSE_DATABASE__URL"


@contextmanager
def migrated_session(config: str | None) -> Iterator[Any]:
    """A database session on the store of the settings at `config` (None: the default
    settings), once `require_migrated` holds; the engine is disposed after."""
    from sqlalchemy.orm import Session

    from collector.settings import load_settings
    from collector.store.session import make_engine

    url = load_settings(config).database.url.get_secret_value()
    require_migrated(url)
    engine = make_engine(url)
    try:
        with Session(engine) as session:
            yield session
    finally:
        engine.dispose()
