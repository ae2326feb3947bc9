"""All the support relations noise sensitivity needs, for all contexts, in one request.

RAGAS asks one question per (context, statement list) pair, 2N+3 calls; here the judge
fills the whole matrix at once: for each reference claim, the passages that support it; for
each answer claim, whether the reference supports it and which passages do."""

from __future__ import annotations

from evaluators.judge.prompts.base import Prompt

NOISE_SUPPORT = Prompt(
    task="noise_support",
    instructions="""
You map claims to the passages that support them. You receive retrieved passages
(numbered), a reference answer, the reference's claims (numbered R1, R2, ...) and the
claims of a system's answer (numbered A1, A2, ...).
- For every reference claim Ri: list the numbers of the passages that state it or let a
  careful reader conclude it directly (an empty list if none).
- For every answer claim Ai: set in_reference = 1 if the reference answer states or
  directly implies it, else 0; and list the numbers of the passages that state it or
  directly imply it (an empty list if none).
Decide each claim from the texts alone, not from general knowledge. Use the claim numbers
without their R/A letters in the "item" fields.
""",
    schema={
        "type": "object",
        "properties": {
            "reference": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "item": {"type": "integer", "minimum": 1},
                        "contexts": {"type": "array", "items": {"type": "integer"}},
                    },
                    "required": ["item", "contexts"],
                },
            },
            "answer": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "item": {"type": "integer", "minimum": 1},
                        "in_reference": {"type": "integer", "enum": [0, 1]},
                        "contexts": {"type": "array", "items": {"type": "integer"}},
                    },
                    "required": ["item", "in_reference", "contexts"],
                },
            },
        },
        "required": ["reference", "answer"],
    },
)
