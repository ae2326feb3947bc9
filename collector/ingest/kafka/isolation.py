"""Poison isolation: a batch the database keeps refusing is split until the refused records
are found; they go to `dead_letters`, everything else is stored.

A failure is either an outage of the database (it cannot be reached now: retry the whole
batch later, for as long as it takes) or anything else, which may be caused by one record
(a value a writer cannot encode, a constraint, a trigger, a bug on an odd input). For the
latter the consumer calls `store_bisecting` once the batch has failed
`kafka.isolate_after_failures` times: every piece is stored in its own transaction (writes
are idempotent, so a piece committed before a later outage is a harmless duplicate when the
batch is replayed), a failing piece is split in two, and a single failing record becomes a
dead letter whose reason names the exception type. One poison record in a batch of n costs
about 2·log2(n) small transactions, writing about 2n records in all.

A dead letter that cannot be written either (the database refuses the row itself) is
retried without its raw bytes; if even that fails the record is logged at ERROR with its
position and counted as `lost`, and the consumer moves on: one record must never stop the
stream. An outage at any step propagates, so the batch is retried whole.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from sqlalchemy.exc import DBAPIError, DisconnectionError, InterfaceError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from collector.ingest.pipeline import BatchResult, RawMessage
from collector.store.repository import DeadLetterRow, insert_dead_letters

logger = logging.getLogger(__name__)

# PostgreSQL error classes psycopg reports as OperationalError although a statement's
# content caused them: 54 = program limit exceeded (e.g. 54001 stack depth exceeded for
# JSON nested too deep). Retrying those cannot help.
_RECORD_CAUSED_SQLSTATE_CLASSES = ("54",)

STORE_ERROR = "store_error"
LOST = "dead_letter_failed"
_DETAIL_CHARS = 2000


def is_database_unavailable(exc: BaseException) -> bool:
    """True when `exc` means "the database cannot be reached now" (not a bug in a batch):
    connection refused or dropped, server shutting down, connections not allowed, SQLite
    busy or locked."""
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    if not isinstance(exc, OperationalError | InterfaceError | DisconnectionError):
        return False
    sqlstate = getattr(getattr(exc, "orig", None), "sqlstate", None)
    return not (isinstance(sqlstate, str) and sqlstate.startswith(_RECORD_CAUSED_SQLSTATE_CLASSES))


def describe(exc: BaseException, limit: int = _DETAIL_CHARS) -> str:
    """`Type: message` of the root database error (or of `exc`), never raising: some
    poison makes `str()` of its own exception fail (recursion while formatting)."""
    root = getattr(exc, "orig", None)
    shown = root if isinstance(root, BaseException) else exc
    try:
        text = str(shown)
    except Exception as failure:
        text = f"<message unavailable: {type(failure).__name__} while formatting it>"
    text = text.replace("\x00", "\\x00").strip()
    if len(text) > limit:
        text = text[:limit] + "…"
    return f"{type(shown).__name__}: {text}" if text else type(shown).__name__


def store_error_reason(exc: BaseException) -> str:
    """The `dead_letters.reason` (and counter label) of a record the database refused."""
    root = getattr(exc, "orig", None)
    name = type(root if isinstance(root, BaseException) else exc).__name__
    return f"{STORE_ERROR}:{name}"[:64]


def store_bisecting(
    messages: Sequence[RawMessage],
    store: Callable[[Sequence[RawMessage]], BatchResult],
    dead_letter: Callable[[RawMessage, BaseException], BatchResult],
    *,
    known_to_fail: bool = False,
) -> BatchResult:
    """Store `messages` with `store` (one transaction per call), splitting on any failure
    but an outage; a record that fails alone is handed to `dead_letter`. Order is kept.
    `known_to_fail` skips the attempt at the whole (the consumer saw it fail already)."""
    if not (known_to_fail and len(messages) > 1):
        try:
            return store(messages)
        except Exception as exc:
            if is_database_unavailable(exc):
                raise
            if len(messages) == 1:
                return dead_letter(messages[0], exc)
            logger.debug(
                "piece of %d messages failed (%s): splitting", len(messages), describe(exc)
            )
    middle = len(messages) // 2
    result = store_bisecting(messages[:middle], store, dead_letter)
    result.add(store_bisecting(messages[middle:], store, dead_letter))
    return result


class DeadLetterWriter:
    """Writes one refused record to `dead_letters` in its own transaction, with fallbacks."""

    def __init__(self, session_factory: sessionmaker[Session]) -> None:
        self.session_factory = session_factory

    def __call__(self, message: RawMessage, exc: BaseException) -> BatchResult:
        reason = store_error_reason(exc)
        detail = describe(exc)
        position = f"{message.topic}/{message.partition}/{message.offset}"
        logger.error(
            "message at %s could not be stored, sent to dead_letters: %s", position, detail
        )
        raw = message.value if message.value is not None else b""
        row = DeadLetterRow(
            message.topic, message.partition, message.offset, message.key, raw, reason, detail
        )
        try:
            self._write(row)
            return _counted(message, reason)
        except Exception as first:
            if is_database_unavailable(first):
                raise
            failure = describe(first, 500)
        # The row itself is refused: keep the position, the reason and why, not the bytes.
        bare = DeadLetterRow(
            message.topic,
            message.partition,
            message.offset,
            None,
            b"",
            reason,
            f"{detail} [the raw {len(raw)} bytes could not be stored either: {failure}]",
        )
        try:
            self._write(bare)
            logger.error("dead letter at %s stored without its raw bytes: %s", position, failure)
            return _counted(message, reason)
        except Exception as second:
            if is_database_unavailable(second):
                raise
            logger.error(
                "message at %s could be neither stored nor dead-lettered, skipped "
                "(re-read it from Kafka at that offset): %s; dead letter: %s",
                position,
                detail,
                describe(second, 500),
            )
            result = _counted(message, LOST)
            result.lost = 1
            return result

    def _write(self, row: DeadLetterRow) -> None:
        session = self.session_factory()
        try:
            insert_dead_letters(session, [row])
            session.commit()
        except BaseException:
            try:
                session.rollback()
            except Exception as exc:
                logger.debug("rollback failed: %s", exc)
            raise
        finally:
            session.close()


def _counted(message: RawMessage, reason: str) -> BatchResult:
    return BatchResult(
        consumed=1,
        invalid=1,
        unstored=1,
        invalid_by_reason={reason: 1},
        consumed_by_topic={message.topic: 1},
    )
