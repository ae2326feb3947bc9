"""Structured output the judge's server actually enforces, chosen per model.

Servers constrain a model's reply to a JSON schema in different ways, and a 135M model
only returns schema-valid JSON when its server enforces the schema while decoding:

- ``json_schema``: OpenAI's ``response_format: {"type": "json_schema", ...}`` (OpenAI,
  Azure, LM Studio, vLLM and SGLang's OpenAI endpoints, and providers litellm translates);
- ``json_object_schema``: llama.cpp's ``{"type": "json_object", "schema": {...}}`` (the
  llama.cpp and llama-cpp-python servers turn the schema into a grammar; they reject
  ``json_schema``);
- ``guided_json``: vLLM / SGLang's ``extra_body={"guided_json": schema}``;
- ``ollama_format``: Ollama's ``format`` field holding the schema;
- ``tools``: one forced function call whose parameters are the schema;
- ``prompt``: nothing but the schema in the system prompt (the last resort).

`mode_chain` gives, per model, the modes to try in order ("auto" looks at the litellm
provider; a configured mode is tried first, then "prompt"). A server that refuses a mode
(HTTP 400/422 naming the parameter, see `refuses`) makes the client move to the next one
for the rest of the process.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

MODES = ("json_schema", "json_object_schema", "guided_json", "ollama_format", "tools", "prompt")
AUTO = "auto"

# What a refusal of each mode names (lower case), besides the generic words below.
_REFUSAL_WORDS: dict[str, tuple[str, ...]] = {
    "json_schema": ("response_format", "json_schema", "response format"),
    "json_object_schema": ("response_format", "json_object", "response format", "schema"),
    "guided_json": ("guided_json", "guided", "extra_body", "extra inputs"),
    "ollama_format": ("format",),
    "tools": ("tool", "function"),
    "prompt": (),
}
_GENERIC = ("not supported", "unsupported", "not permitted", "extra inputs", "unrecognized")


def parse_setting(value: str | Mapping[str, str] | None) -> dict[str, str]:
    """``"auto"``, a mode for every model, or ``"model=mode,model2=mode"`` -> {model or
    "*": mode}; unknown modes raise ValueError naming the known ones."""
    if value is None:
        return {"*": AUTO}
    pairs: dict[str, str] = {}
    if isinstance(value, Mapping):
        items = list(value.items())
    else:
        items = []
        for part in str(value).split(","):
            part = part.strip()
            if not part:
                continue
            model, sep, mode = part.rpartition("=")
            items.append((model.strip() if sep else "*", mode.strip()))
    for model, mode in items:
        if mode != AUTO and mode not in MODES:
            raise ValueError(
                f"structured output mode {mode!r} is unknown; use auto or one of {', '.join(MODES)}"
            )
        pairs[model] = mode
    pairs.setdefault("*", AUTO)
    return pairs


def provider_of(model: str) -> str:
    """The litellm provider prefix of a model name ("ollama_chat/qwen" -> "ollama_chat")."""
    prefix, sep, _rest = model.partition("/")
    return prefix if sep else ""


def mode_chain(model: str, setting: Mapping[str, str], supports_schema: bool) -> list[str]:
    """Modes to try for `model`, best first; always ends with "prompt".

    `supports_schema` is litellm's `supports_response_schema` for the model (True for
    known hosted models whose provider takes OpenAI's json_schema or translates it).
    """
    chosen = setting.get(model, setting.get("*", AUTO))
    if chosen != AUTO:
        return [chosen] if chosen == "prompt" else [chosen, "prompt"]
    provider = provider_of(model)
    if provider in ("ollama", "ollama_chat"):
        return ["ollama_format", "prompt"]
    if provider in ("hosted_vllm", "vllm", "sglang"):
        return ["guided_json", "json_schema", "tools", "prompt"]
    if provider in ("llamafile", "llama_cpp", "llamacpp"):
        return ["json_object_schema", "json_schema", "tools", "prompt"]
    if supports_schema:
        return ["json_schema", "tools", "prompt"]
    # An OpenAI-compatible server of unknown kind: try the standard, then llama.cpp's.
    return ["json_schema", "json_object_schema", "tools", "prompt"]


def request_fields(mode: str, model: str, task: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """The litellm keyword arguments that ask for `schema` in `mode`."""
    body = dict(schema)
    if mode == "json_schema":
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": task, "schema": body, "strict": False},
            }
        }
    if mode == "json_object_schema":
        return {"response_format": {"type": "json_object", "schema": body}}
    if mode == "guided_json":
        return {"extra_body": {"guided_json": body}}
    if mode == "ollama_format":
        if provider_of(model) in ("ollama", "ollama_chat"):
            return {"format": body}
        return {"extra_body": {"format": body}}
    if mode == "tools":
        return {
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": task,
                        "description": f"Record the answer of the {task} task.",
                        "parameters": body,
                    },
                }
            ],
            "tool_choice": {"type": "function", "function": {"name": task}},
            # litellm 1.106 imports its MCP gateway (an optional package) for any request
            # with tools; ours are plain functions.
            "_skip_mcp_handler": True,
        }
    return {}


def refuses(mode: str, status: int | None, message: str) -> bool:
    """Whether an error answer means the server does not take `mode` (rather than a bad
    request for another reason): an HTTP 400/422 (or no status) naming the parameter, or
    an HTTP 500 reporting a request validation error about it (llama-cpp-python's server
    with recent FastAPI answers its validation errors with 500)."""
    if mode == "prompt" or (status is not None and status not in (400, 404, 415, 422, 500, 501)):
        return False
    text = message.lower()
    if status == 500 and "validation error" not in text:
        return False
    words = _REFUSAL_WORDS.get(mode, ())
    if any(w in text for w in words):
        return True
    return status == 422 and any(w in text for w in _GENERIC)


def tool_arguments(message: Any) -> str | None:
    """The JSON arguments of the first tool call of a reply message, if any."""
    calls = getattr(message, "tool_calls", None) or []
    for call in calls:
        function = getattr(call, "function", None)
        if function is None and isinstance(call, Mapping):
            function = call.get("function")
        arguments = (
            function.get("arguments")
            if isinstance(function, Mapping)
            else getattr(function, "arguments", None)
        )
        if isinstance(arguments, Mapping):
            return json.dumps(arguments, ensure_ascii=False)
        if isinstance(arguments, str) and arguments.strip():
            return arguments
    return None
