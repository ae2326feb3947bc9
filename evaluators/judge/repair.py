"""The one repair request a judge gets when its reply could not be used.

A malformed, out-of-range or truncated reply is answered once with the conversation so
far, the model's own reply, and what was wrong with it; other failures (refusals, empty
replies, transport errors) are not repaired. The problem is neutralised before it is
shown, since the error may quote the reply, itself shaped by untrusted input.
"""

from __future__ import annotations

from collections.abc import Sequence

from evaluators.judge.errors import (
    JudgeError,
    JudgeInvalidOutput,
    JudgeOutOfRange,
    JudgeTruncated,
)
from evaluators.judge.prompts.fencing import neutralise

REPAIRABLE = (JudgeInvalidOutput, JudgeOutOfRange, JudgeTruncated)
"""Reply problems worth one repair request."""


def repair_messages(
    messages: Sequence[dict[str, str]], reply_text: str, error: JudgeError
) -> list[dict[str, str]]:
    """The repair request: `messages`, the unusable reply, and what was wrong with it."""
    problem = (
        "it was cut off at the token limit; answer again, more briefly"
        if isinstance(error, JudgeTruncated)
        else str(error)
    )
    return [
        *messages,
        {"role": "assistant", "content": reply_text},
        {
            "role": "user",
            "content": (
                f"That reply could not be used: {neutralise(problem)}. Answer "
                "again with only the corrected JSON object, following the schema "
                "exactly."
            ),
        },
    ]
