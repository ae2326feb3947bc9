"""The building blocks of the setting groups: a frozen group that refuses unknown keys,
and lists that may also be given as one comma-separated string (environment variables)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict
from pydantic_settings import NoDecode

CSV = Annotated[list[str], NoDecode]
"""A list that may also be given as one comma-separated string (environment variables)."""


class Group(BaseModel):
    """A nested group of settings: frozen, and an unknown key is an error. The docstring
    under a field is its description (the generated settings reference shows it)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


def split_csv(value: Any) -> Any:
    """`"a, b ,c"` -> `["a", "b", "c"]` (empty parts dropped); anything else unchanged."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value
