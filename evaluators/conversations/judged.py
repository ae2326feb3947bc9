"""The judged outcome of a closed session: completeness and frustration (issue 42 item 3).

With a judge configured, a sampled closed session is shown to every judge model as its
turns (each user message and answer fenced as untrusted text, `evaluators.judge.prompts`)
with the prompts of its users' language (`evaluators.conversations.prompts`):
- completeness: the share of the user's intentions the conversation satisfied (the judge
  lists the intentions and a 0/1 verdict for each; a session with none, only greetings,
  is skipped "no intentions"); higher is better;
- frustration: the judge's 0-1 rating of the user's frustration; lower is better.
Each is the mean over the judge models (`evaluators.judge.metric.combine`: a failure or an
exhausted budget of any model decides it). Caching, budgets, retries and structured
output are the judge client's, as for the per-trace judge metrics; the result carries a
signature with the judge models and the hash of the prompts used.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from evaluators.conversations.prompts import COMPLETENESS, FRUSTRATION, PROMPTS
from evaluators.conversations.types import Turn
from evaluators.judge.errors import BudgetExceeded, JudgeError
from evaluators.judge.metric import BUDGET, combine
from evaluators.judge.prompts.base import fence
from evaluators.judge.protocol import Judge
from evaluators.outcome import Failed, Outcome, Skipped
from evaluators.scripts import char_script
from evaluators.signature import Signature, text_hash

logger = logging.getLogger(__name__)

MAX_MESSAGE_CHARS = 2000
"""A message or answer longer than this is cut (its start kept) for the judge: a 50-turn
session of RAG answers would otherwise run to ~150,000 characters a request."""
NO_INTENTIONS = "no intentions"
NO_MESSAGES = "no user messages"
LANGUAGES = ("en", "ru")


@dataclass(frozen=True)
class Intention:
    """One thing the user came for, as a judge model saw it, and whether they got it."""

    text: str
    satisfied: bool


@dataclass(frozen=True)
class JudgedOutcome:
    """A session's judged outcome: each a `JudgeScore` (mean over models), `Skipped` or
    `Failed`; the intentions each judge model listed; the prompts' language."""

    completeness: Outcome
    frustration: Outcome
    intentions: Mapping[str, tuple[Intention, ...]]
    language: str
    signature: Signature


def conversation_language(turns: Sequence[Turn]) -> str:
    """ "ru" when the users' messages hold more Cyrillic than Latin letters, else "en"."""
    counts = {"Cyrillic": 0, "Latin": 0}
    for turn in turns:
        for ch in turn.question:
            script = char_script(ch)
            if script in counts:
                counts[script] += 1
    return "ru" if counts["Cyrillic"] > counts["Latin"] else "en"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]} [... {len(text) - limit} chars cut]"


def transcript(turns: Sequence[Turn], max_chars: int = MAX_MESSAGE_CHARS) -> str:
    """The session as the judge reads it: per turn the user's message and the answer,
    each in its own fence numbered by turn (a turn without answer says so outside), each
    cut to `max_chars`."""
    parts = []
    for number, turn in enumerate(turns, start=1):
        parts.append(fence("user", _cut(turn.question, max_chars), turn=number))
        if turn.answer and turn.answer.strip():
            parts.append(fence("assistant", _cut(turn.answer, max_chars), turn=number))
        else:
            parts.append(f"(turn {number}: the assistant gave no answer)")
    return "\n\n".join(parts)


def prompt_hash(language: str | None = None) -> str:
    """The combined version of the prompts of `language` (None: of both languages), for
    the signature: changing any word of them changes it."""
    languages = LANGUAGES if language is None else (language,)
    versions = [PROMPTS[m][lang].version for m in (COMPLETENESS, FRUSTRATION) for lang in languages]
    return text_hash("|".join(versions))


async def judge_session(judge: Judge, turns: Sequence[Turn]) -> JudgedOutcome:
    """Ask every judge model for the session's completeness and frustration."""
    if not turns:
        raise ValueError("a session has at least one turn")
    language = conversation_language(turns)
    signature = Signature(judge_model=",".join(judge.models), prompt_hash=prompt_hash(language))
    if not any(t.question.strip() for t in turns):
        skipped = Skipped(NO_MESSAGES)
        return JudgedOutcome(skipped, skipped, MappingProxyType({}), language, signature)
    user = transcript(turns)
    trace_id = turns[-1].trace_id
    models = list(judge.models)
    lists: dict[str, tuple[Intention, ...]] = {}

    async def completeness(model: str) -> float | Skipped:
        data = await judge.ask(
            PROMPTS[COMPLETENESS][language],
            user,
            model=model,
            metric=COMPLETENESS,
            trace_id=trace_id,
        )
        found = _intentions(data)
        lists[model] = found
        if not found:
            return Skipped(NO_INTENTIONS)
        return sum(i.satisfied for i in found) / len(found)

    async def frustration(model: str) -> float:
        data = await judge.ask(
            PROMPTS[FRUSTRATION][language],
            user,
            model=model,
            metric=FRUSTRATION,
            trace_id=trace_id,
        )
        return float(data["score"])

    done = await asyncio.gather(
        *(_guarded(completeness(m), trace_id) for m in models),
        *(_guarded(frustration(m), trace_id) for m in models),
    )
    return JudgedOutcome(
        completeness=combine(models, done[: len(models)]),
        frustration=combine(models, done[len(models) :]),
        intentions=MappingProxyType({m: lists[m] for m in models if m in lists}),
        language=language,
        signature=signature,
    )


def _intentions(data: Mapping[str, Any]) -> tuple[Intention, ...]:
    return tuple(
        Intention(str(item["intention"]), bool(item["satisfied"])) for item in data["intentions"]
    )


async def _guarded(job: Awaitable[float | Skipped], trace_id: str) -> float | Skipped | Failed:
    try:
        return await job
    except BudgetExceeded:
        return Skipped(BUDGET)
    except JudgeError as exc:
        return Failed(exc.error_type, str(exc))
    except Exception as exc:
        # one session's bug must not sink the others judged beside it
        logger.exception("judged outcome failed for the session ending at trace %s", trace_id)
        return Failed("internal_error", f"{type(exc).__name__}: {exc}")
