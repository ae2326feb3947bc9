"""Build the LLM judge from the settings (used by `ragpulse evaluate` and the judge jobs)."""

from __future__ import annotations

from sqlalchemy.orm import Session, sessionmaker

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
