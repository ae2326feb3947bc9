"""The settings reference: every field of `Settings`, nested groups flattened, with its
environment variable, type, default and the description written under it in the code
(pydantic reads attribute docstrings: `use_attribute_docstrings` on every group)."""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

from collector.settings import ENV_PREFIX, Settings
from ragpulse.docs.markdown import BANNER, code, table

INTRO = """# Settings

Every setting of ragpulse, read from the settings model (`collector/settings/`).
Sources, strongest first: `RAGPULSE_*` environment variables (`__` between a group and its
field: `RAGPULSE_DATABASE__URL`), then a YAML file given with `--config` (the same keys,
nested: `database: {url: ...}`), then the defaults below. A list may be given as one
comma-separated string; a mapping (marked *mapping*) as JSON. An unknown key or an
impossible value stops ragpulse with a line naming the setting.

"""


def type_text(annotation: Any) -> str:
    """A reader's name for a field's type: `int`, `list of str`, `one of a, b`, ..."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return type_text(args[0])
    if origin is typing.Literal:
        return "one of " + ", ".join(str(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        named = [type_text(a) for a in args if a is not type(None)]
        optional = " (optional)" if len(named) < len(args) else ""
        return " or ".join(named) + optional
    if origin is list:
        return f"list of {type_text(args[0])}"
    if origin is dict:
        return f"mapping {type_text(args[0])} → {type_text(args[1])}"
    if annotation is SecretStr:
        return "secret str"
    if annotation is Path:
        return "path"
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation)


def default_text(field: FieldInfo) -> str:
    """The default as it would be written in YAML (none, true, a list, JSON)."""
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, SecretStr):  # a default written in the code is no secret
        return value.get_secret_value()
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) if value else "(empty)"
    if isinstance(value, dict):
        return json.dumps(value) if value else "(empty)"
    return str(value)


def _group(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def rows(model: type[BaseModel] = Settings, path: tuple[str, ...] = ()) -> list[list[str]]:
    """[key, environment variable, type, default, description] of every leaf setting."""
    out: list[list[str]] = []
    for name, field in model.model_fields.items():
        key = (*path, name)
        group = _group(field.annotation)
        if group is not None:
            out += rows(group, key)
            continue
        env = ENV_PREFIX + "__".join(part.upper() for part in key)
        out.append(
            [
                code(".".join(key)),
                code(env),
                type_text(field.annotation),
                code(default_text(field)),
                field.description or "",
            ]
        )
    return out


def env_names() -> list[str]:
    """Every setting's environment variable (what the test looks for on the page)."""
    return [row[1].strip("`") for row in rows()]


def render() -> str:
    """The page: one table per top-level group, in the order of `Settings`."""
    parts = [BANNER, INTRO]
    header = ("setting", "environment variable", "type", "default", "description")
    by_group: dict[str, list[list[str]]] = {}
    for row in rows():
        by_group.setdefault(row[0].strip("`").split(".")[0], []).append(row)
    for group, group_rows in by_group.items():
        doc = _group(Settings.model_fields[group].annotation)
        parts.append(f"## `{group}`\n\n")
        if doc is not None and doc.__doc__:
            parts.append(" ".join(doc.__doc__.split()) + "\n\n")
        parts.append(table(header, group_rows) + "\n")
    return "".join(parts).rstrip("\n") + "\n"
