"""Configuration errors a person can act on: each bad setting named as the user wrote it
(the `RAGPULSE_…` environment variable, or the YAML key of the config file), with the
value that was refused (secrets masked), and a "did you mean" for a mistyped name."""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, get_args, get_origin

from pydantic import BaseModel, SecretStr
from pydantic_core import ErrorDetails

MAX_SHOWN = 80
"""Characters of a refused value echoed back."""


def env_name(prefix: str, path: Sequence[str | int]) -> str:
    """`RAGPULSE_KAFKA__MAX_MESSAGE_BYTES` for ("kafka", "max_message_bytes")."""
    return prefix + "__".join(str(p).upper() for p in path)


def setting_paths(model: type[BaseModel], base: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every setting's dotted path (groups descended; a dict setting is one leaf)."""
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield from setting_paths(annotation, (*base, name))
        else:
            yield (*base, name)


def suggestion(name: str, known: Sequence[str]) -> str:
    """' (did you mean X?)' for the closest known name, or ''."""
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
    return f" (did you mean {close[0]}?)" if close else ""


def is_secret(model: type[BaseModel], path: Sequence[str | int]) -> bool:
    """Whether the setting at `path` holds a secret (its value is never echoed)."""
    current: Any = model
    for part in path:
        fields = getattr(current, "model_fields", None)
        if fields is None or part not in fields:
            return False
        current = fields[part].annotation
    return current is SecretStr or SecretStr in get_args(current)


def shown(value: Any) -> str:
    """A refused value as the user would recognise it, cut to `MAX_SHOWN` characters."""
    if not isinstance(value, str):
        text = repr(value)
        return text[:MAX_SHOWN] + "…" if len(text) > MAX_SHOWN else text
    return repr(value[:MAX_SHOWN] + "…") if len(value) > MAX_SHOWN else repr(value)


def describe(
    err: ErrorDetails,
    *,
    model: type[BaseModel],
    prefix: str,
    environ: Mapping[str, str],
    config_file: str | None,
    from_file: Mapping[str, Any],
) -> str:
    """One line for one validation error: where it was set, the value, what is wrong."""
    path = [p for p in err["loc"] if isinstance(p, str | int)]
    variable = env_name(prefix, path)
    dotted = ".".join(str(p) for p in path) or "settings"
    if not path:
        where = dotted
    elif variable in environ:
        where = f"{variable} ({dotted})"
    elif _in(from_file, path) and config_file is not None:
        where = f"{dotted} in {config_file}"
    else:
        where = f"{dotted} ({variable})"
    line = f"  {where}: {err['msg']}"
    if path and err["type"] != "missing" and not is_secret(model, path):
        value = environ.get(variable, err.get("input"))
        if not isinstance(value, dict):
            line += f" (got {shown(value)})"
    if err["type"] == "extra_forbidden" and path:
        group = [str(p) for p in path[:-1]]
        siblings = [
            ".".join(p[len(group) :])
            for p in setting_paths(model)
            if list(p[: len(group)]) == group
        ]
        line += suggestion(str(path[-1]), siblings)
    return line


def _in(data: Mapping[str, Any], path: Sequence[str | int]) -> bool:
    current: Any = data
    for part in path:
        if not isinstance(current, Mapping) or part not in current:
            return False
        current = current[part]
    return True


def unknown_env(environ: Mapping[str, str], model: type[BaseModel], prefix: str) -> list[str]:
    """Environment variables with our prefix that name no setting (typos), each with a
    "did you mean" when one is close."""
    known = [env_name(prefix, p) for p in setting_paths(model)]
    unknown = []
    for name in environ:
        if not name.startswith(prefix) or name.startswith(prefix + "TEST_"):
            continue
        path = name[len(prefix) :].lower().split("__")
        current: Any = model
        for part in path:
            if get_origin(current) is dict:  # a key of a dict setting, e.g. labels.per_label
                current = get_args(current)[1]
                continue
            fields = getattr(current, "model_fields", None)
            if fields is None or part not in fields:
                unknown.append(name + suggestion(name, known))
                break
            current = fields[part].annotation
    return unknown
