"""Build the LLM judge from the settings (used by `ragpulse evaluate` and the judge jobs)."""

from __future__ import annotations

import socket
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy.orm import Session, sessionmaker

from collector.errors import UserError, one_line
from collector.settings import JudgeSettings
from collector.store.judgments import SqlJudgmentStore
from evaluators.judge import InMemoryJudgmentStore, JudgeClient, JudgeConfig, JudgmentStore


def make_judge(
    settings: JudgeSettings, session_factory: sessionmaker[Session] | None = None
) -> JudgeClient | None:
    """A judge client when `judge.models` is set, else None (judge metrics are skipped).

    With a session factory the `judgments` table is the cache and budget ledger; without
    one the cache lives in memory for this process only. The API key is unwrapped from its
    `SecretStr` only inside the client config, whose repr hides it.
    """
    if not settings.models:
        return None
    store: JudgmentStore = InMemoryJudgmentStore()
    if session_factory is not None:
        store = SqlJudgmentStore(session_factory)
    return JudgeClient(JudgeConfig.from_settings(settings), store)


def _public(api_base: str) -> str:
    """`api_base` without any user:password part, for messages."""
    parts = urlsplit(api_base)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return parts._replace(netloc=netloc).geturl() if "@" in parts.netloc else api_base


def require_reachable(settings: JudgeSettings, timeout_s: float = 5.0) -> None:
    """Before a one-shot run (`evaluate`, `jobs run`) that will ask the judge: a TCP
    connection to the configured `api_base` must open, or the run would spend its retries
    on every sample only to report the same refusal per sample. No request is sent, so
    nothing is paid. Without `api_base` (the provider's own endpoint) nothing is checked;
    `unreachable` then tells after the run."""
    if not settings.models or not settings.api_base:
        return
    parts = urlsplit(settings.api_base)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError(
            f"judge.api_base {_public(settings.api_base)!r} is not an http(s):// URL "
            "(RAGPULSE_JUDGE__API_BASE)"
        )
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise UserError(f"judge.api_base {_public(settings.api_base)!r}: {exc}") from None
    try:
        with socket.create_connection(
            (parts.hostname, port), timeout=min(timeout_s, settings.timeout_s)
        ):
            pass
    except OSError as exc:
        reason = one_line(exc) or type(exc).__name__
        raise UserError(
            f"the judge server {_public(settings.api_base)} cannot be reached ({reason}): "
            "start it or fix RAGPULSE_JUDGE__API_BASE"
        ) from None


def unreachable(judge: Any) -> str | None:
    """One line when every request of this judge client failed to connect (none got any
    reply, none failed otherwise), else None: a run like that measured nothing."""
    stats = judge.stats
    failures: dict[str, int] = stats.failures
    if stats.answered or not failures or set(failures) != {"connection_error"}:
        return None
    where = _public(judge.config.api_base) if judge.config.api_base else "its provider"
    return (
        f"the judge could not be reached: all {sum(failures.values())} judge requests "
        f"({', '.join(judge.models)} at {where}) failed to connect"
    )
