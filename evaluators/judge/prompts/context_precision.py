"""One verdict per retrieved context: did it help reach the target answer (seed 002)?

The target is the reference answer when one exists (reference-based), else the system's
own answer (response-based); the `kind` attribute of the fence tells the judge which."""

from __future__ import annotations

from evaluators.judge.prompts.base import Prompt, verdict_list_schema

CONTEXT_PRECISION = Prompt(
    task="context_precision",
    instructions="""
You decide, for each numbered retrieved passage, whether it was useful for arriving at the
target answer to the question. The target answer is either a reference answer written by a
person (kind="reference") or the answer a system gave (kind="response"); in both cases treat
it as the answer to reach.
- useful = 1: the passage provides information that the target answer relies on;
- useful = 0: the passage provides none of it, even if it is on the same topic.
Judge each passage on its own. Give exactly one verdict per passage, using the passage
numbers shown.
""",
    schema=verdict_list_schema("context", "useful"),
)
