"""Split the reference into statements and attribute each to the contexts, in one request."""

from __future__ import annotations

from evaluators.judge.prompts.base import Prompt

CONTEXT_RECALL = Prompt(
    task="context_recall",
    instructions="""
You measure how much of a reference answer the retrieved passages cover. First break the
reference answer into its factual claims, each a short self-contained sentence with one
fact (pronouns replaced by names, numbers kept exactly). Then, for each claim, decide
whether the passages contain it:
- attributed = 1: the claim is stated in the passages or follows directly from them;
- attributed = 0: the passages do not contain it.
List the claims in the order they appear in the reference answer. If the reference answer
makes no factual claim, return an empty list.
""",
    schema={
        "type": "object",
        "properties": {
            "statements": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "statement": {"type": "string"},
                        "attributed": {"type": "integer", "enum": [0, 1]},
                    },
                    "required": ["statement", "attributed"],
                },
            }
        },
        "required": ["statements"],
    },
)
