"""`context_entity_recall` (seeds 003, 002): the share of the reference's named entities
that the retrieved contexts mention.

    context_entity_recall = |entities of the reference found in the contexts|
                            / |entities of the reference|

Two requests per sample and judge model: list the reference's entities (independent of the
contexts, so comparing retrievers re-uses it from the cache), then check them all against
all contexts at once. The judge decides presence, so inflected Russian forms ("в Париже"
for "Париж") count as found, which exact string matching would miss.
A sample that retrieved nothing scores 0 (seed 003: 0 found of the reference's entities), so a
retrieval outage lowers this metric as it lowers HitRate instead of shrinking `n`; the
entities are still listed (the same request as with contexts, cached), so a reference that
names none is skipped alike with or without contexts. Skipped without a reference, when the
retrieved contexts all lack text (retrieval happened but cannot be judged), or when the
reference names no entity.
"""

from __future__ import annotations

from evaluators.judge.claims import clean_items, share_in_contexts
from evaluators.judge.metric import NO_CONTEXT_TEXT, judge_metric, texts_of
from evaluators.judge.prompts.base import fence
from evaluators.judge.prompts.entities import ENTITIES, ENTITY_PRESENCE
from evaluators.judge.protocol import Judge
from evaluators.judge.schemas import claim_list
from evaluators.outcome import Skipped
from evaluators.registry import EvalContext
from evaluators.sample import Sample

FAMILY = "context_entity_recall"


def _precheck(sample: Sample, ctx: EvalContext) -> str | None:
    if not (sample.reference and sample.reference.strip()):
        return "no reference"
    return None if texts_of(sample) or not sample.contexts else NO_CONTEXT_TEXT


async def _per_model(judge: Judge, model: str, sample: Sample, ctx: EvalContext) -> float | Skipped:
    reference = sample.reference or ""
    data = await judge.ask(
        ENTITIES,
        fence("text", reference),
        model=model,
        metric=FAMILY,
        trace_id=sample.trace_id,
        schema=claim_list(ENTITIES.schema, "entities", reference),
    )
    entities = clean_items(list(data["entities"]))
    if not entities:
        return Skipped("no entities")
    if not sample.contexts:
        return 0.0
    return await share_in_contexts(
        judge,
        ENTITY_PRESENCE,
        sample,
        entities,
        model=model,
        metric=FAMILY,
        heading="Entities",
        verdict="found",
    )


SPEC = judge_metric(
    FAMILY,
    direction="higher",
    unit="ratio",
    description="Share of the reference's named entities that the retrieved contexts "
    "mention (inflected forms count)",
    needs="reference, contexts with text, a judge model",
    prompts=[ENTITIES, ENTITY_PRESENCE],
    precheck=_precheck,
    per_model=_per_model,
)
