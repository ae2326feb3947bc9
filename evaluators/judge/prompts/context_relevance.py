"""Rate every retrieved context 0/1/2 for the question, all in one request (seeds 000/001)."""

from __future__ import annotations

from evaluators.judge.prompts.base import Prompt

CONTEXT_RELEVANCE = Prompt(
    task="context_relevance",
    instructions="""
You grade how useful each retrieved passage is for answering a user's question.
You receive the question and numbered passages. Grade every passage on its own, using
only what the passage itself says:
- 2: the passage contains the information needed to answer the question fully;
- 1: the passage contains some of the needed information, or related facts that help
  only in part;
- 0: the passage does not help answer the question (off topic, or only mentions the
  same words without the needed facts).
Give exactly one rating per passage, in passage order, using the passage numbers shown.
""",
    schema={
        "type": "object",
        "properties": {
            "ratings": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "context": {"type": "integer", "minimum": 1},
                        "score": {"type": "integer", "enum": [0, 1, 2]},
                    },
                    "required": ["context", "score"],
                },
            }
        },
        "required": ["ratings"],
    },
)
