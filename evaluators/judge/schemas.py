"""A prompt's answer schema narrowed to one input, so a server that enforces schemas while
decoding (llama.cpp grammars, vLLM guided JSON, OpenAI json_schema) cannot produce the
mistakes small models make most: a verdict list with too few or too many rows, item numbers
outside 1..N, or a list of claims repeated until the token limit.

A list of claims or entities may be empty: a refusal ("Я не знаю") states nothing, and a
decoder forced to write at least one claim makes the judge invent it and then score it
(issue 29), where the metric's "no statements" / "no entities" outcome is the true one.

Each function returns a new schema (the prompt's own is never changed); the narrowed schema
is derived from the request's input, so the judge client's cache key stays what it was.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any


def numbered_rows(
    schema: Mapping[str, Any], array_key: str, item_key: str, n: int
) -> dict[str, Any]:
    """Exactly `n` rows under `array_key`, each numbered (`item_key`) within 1..n."""
    out = copy.deepcopy(dict(schema))
    array = out["properties"][array_key]
    array["minItems"] = array["maxItems"] = n
    array["items"]["properties"][item_key] = {"type": "integer", "enum": list(range(1, n + 1))}
    return out


def context_numbers(schema: Mapping[str, Any], path: tuple[str, ...], n: int) -> dict[str, Any]:
    """The integer list at `path` (object keys; "items" steps into an array) holds only
    context numbers 1..n, each at most once."""
    out = copy.deepcopy(dict(schema))
    node: dict[str, Any] = out
    for key in path:
        node = node["items"] if key == "items" else node["properties"][key]
    node["items"] = {"type": "integer", "enum": list(range(1, n + 1))}
    node["maxItems"] = n
    return out


def claim_list(schema: Mapping[str, Any], array_key: str, text: str) -> dict[str, Any]:
    """At most about one entry under `array_key` per 25 characters of `text` (30 at most,
    2 at least): the cap stops a small model repeating itself until its token limit. No
    lower bound: a text that claims nothing decomposes into an empty list. An entry itself
    is never empty (it would be dropped unscored)."""
    out = copy.deepcopy(dict(schema))
    array = out["properties"][array_key]
    array.pop("minItems", None)
    array["maxItems"] = max(2, min(30, len(text) // 25 + 1))
    entry = array["items"]
    for node in (entry, *entry.get("properties", {}).values()):
        if node.get("type") == "string":
            node["minLength"] = 2
    return out


MAX_STRING = 400


def bounded(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` with every string limited to `MAX_STRING` characters unless it says
    otherwise: under an enforced schema a small model otherwise tends to write one
    "reason" until its token limit."""
    out = copy.deepcopy(dict(schema))

    def walk(node: Any) -> None:
        if not isinstance(node, dict):
            return
        if node.get("type") == "string":
            node.setdefault("maxLength", MAX_STRING)
        for sub in node.get("properties", {}).values():
            walk(sub)
        walk(node.get("items"))

    walk(out)
    return out


def exactly(schema: Mapping[str, Any], array_key: str, n: int) -> dict[str, Any]:
    """Exactly `n` entries under `array_key`, none with an empty text (e.g. the N
    questions response relevancy asks for)."""
    out = copy.deepcopy(dict(schema))
    array = out["properties"][array_key]
    array["minItems"] = array["maxItems"] = n
    entry = array["items"]
    for node in (entry, *entry.get("properties", {}).values()):
        if node.get("type") == "string":
            node["minLength"] = 5
    return out
