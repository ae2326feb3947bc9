"""Split a text (an answer or a reference) into short self-contained factual statements,
and check statements against passages. Shared by faithfulness and noise sensitivity, so a
sample's answer is decomposed once and the cache serves the other metric."""

from __future__ import annotations

from evaluators.judge.prompts.base import Prompt, verdict_list_schema

STATEMENTS = Prompt(
    task="statements",
    instructions="""
You break a text into the factual claims it makes. You receive the question the text
responds to and the text itself. List every claim as a short sentence that can be checked
on its own: replace pronouns with the names they stand for, keep numbers, dates and units
exactly, and give each claim one fact. Leave out greetings, hedges and sentences that
claim nothing (opinions, offers of further help). If the text makes no factual claim,
return an empty list.
""",
    schema={
        "type": "object",
        "properties": {"statements": {"type": "array", "items": {"type": "string"}}},
        "required": ["statements"],
    },
    # 2: replies decoded under a schema that demanded at least one claim may hold a claim
    # invented for a text that states nothing; a new version keeps them out of the cache.
    revision=2,
)

STATEMENT_SUPPORT = Prompt(
    task="statement_support",
    instructions="""
You check numbered claims against retrieved passages. For each claim decide whether the
passages, taken together, state it or let a careful reader conclude it directly:
- supported = 1: the passages say this, possibly in other words or another grammatical
  form;
- supported = 0: the passages do not say it, say something different, or contradict it.
General knowledge that is not in the passages does not count as support.
Give exactly one verdict per claim, using the claim numbers shown.
""",
    schema=verdict_list_schema("item", "supported"),
)
