"""Generate N questions that the answer would answer, each with a noncommittal flag (seed 002).

The original question is deliberately not shown: the generated questions must come from the
answer alone, otherwise the judge could copy the question and every answer would look
relevant. The number of questions is part of the rendered input (and so of the cache key)."""

from __future__ import annotations

from evaluators.judge.prompts.base import Prompt

QUESTION_GENERATION = Prompt(
    task="question_generation",
    instructions="""
You read an answer given by an assistant and write the questions it answers. Write the
number of different questions requested by the user message, each one a question this
answer would be a direct and complete reply to, phrased as a user would ask it, in the
language of the answer.
For each question also set noncommittal: 1 if the answer is evasive or non-committal
(it says it does not know, is unsure, cannot say, or avoids giving the information),
0 if it commits to actual information.
""",
    schema={
        "type": "object",
        "properties": {
            "questions": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "question": {"type": "string"},
                        "noncommittal": {"type": "integer", "enum": [0, 1]},
                    },
                    "required": ["question", "noncommittal"],
                },
            }
        },
        "required": ["questions"],
    },
)
