"""Direct 0-1 judgments of seed 004: answer relevance (§5.5.2), faithfulness as a single
rating (§5.5.1) and end-to-end score (§6.4.1)."""

from __future__ import annotations

from typing import Any

from evaluators.judge.prompts.base import Prompt

_SCORE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reason": {"type": "string"},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["score"],
}

ANSWER_RELEVANCE = Prompt(
    task="answer_relevance",
    instructions="""
You rate how well an answer addresses the question that was asked, on a scale from 0 to 1:
- 1.0: the answer responds to exactly this question and covers all of it;
- 0.5: the answer responds to the question only in part, or mostly talks about something
  else;
- 0.0: the answer does not respond to this question at all, or evades it.
Intermediate values are allowed. Rate relevance only, not whether the facts are correct.
Give a one-sentence reason first, then the score.
""",
    schema=_SCORE_SCHEMA,
)

E2E_SCORE = Prompt(
    task="e2e_score",
    instructions="""
You rate how useful a system's answer is to the person who asked, compared with a
reference answer that is known to be good, on a scale from 0 to 1:
- 1.0: the answer is as useful as the reference: it gives the same essential facts and
  nothing that contradicts them;
- 0.5: the answer is partly useful: some essential facts are missing or some are wrong;
- 0.0: the answer is not useful: it misses the point, contradicts the reference, or
  declines to answer.
Intermediate values are allowed. Wording and length do not matter, content does.
Give a one-sentence reason first, then the score.
""",
    schema=_SCORE_SCHEMA,
)

FAITHFULNESS_RATING = Prompt(
    task="faithfulness_rating",
    instructions="""
You rate how faithful a system's answer is to the retrieved passages it was given, on a
scale from 0 to 1. An answer is faithful when everything it states is contained in the
passages or follows directly from them, and nothing is invented.
- 1.0: the answer agrees with the passages completely; no hallucinated content;
- 0.5: the answer agrees with the passages only in part: some of what it states is not
  in them;
- 0.0: the answer consists of hallucinated content or contradicts the passages.
Intermediate values are allowed. Judge faithfulness to the passages only, not whether
the passages are true or whether the answer addresses the question.
Give a one-sentence reason first, then the score.
""",
    schema=_SCORE_SCHEMA,
)
