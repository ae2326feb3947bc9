"""Named entities of the reference, then which of them the contexts mention (seed 003).

Matching is done by the judge, not by string comparison, so an entity counts as found in an
inflected form ("Париж" / "в Париже"), an abbreviation or another spelling."""

from __future__ import annotations

from evaluators.judge.prompts.base import Prompt, verdict_list_schema

ENTITIES = Prompt(
    task="entities",
    instructions="""
You list the named entities in a text: people, places, organisations, dates and years,
events, products and works, and numbers with their units. Write each entity once, in its
basic (dictionary) form, as it appears in the text's language. Do not list common nouns or
general concepts. If there are none, return an empty list.
""",
    schema={
        "type": "object",
        "properties": {"entities": {"type": "array", "items": {"type": "string"}}},
        "required": ["entities"],
    },
    # 2: replies decoded under a schema that demanded at least one entity may hold one
    # invented for a text that names none; a new version keeps them out of the cache.
    revision=2,
)

ENTITY_PRESENCE = Prompt(
    task="entity_presence",
    instructions="""
You check whether numbered entities are mentioned in retrieved passages. An entity counts
as found (found = 1) when any passage refers to the same thing, also in another grammatical
case or inflected form, as an abbreviation, a transliteration or a clear short form of the
name; a date counts when the same date or year is given. It is not found (found = 0) when
no passage refers to it, or only to something merely similar.
Give exactly one verdict per entity, using the entity numbers shown.
""",
    schema=verdict_list_schema("item", "found"),
)
