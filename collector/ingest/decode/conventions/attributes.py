"""What a convention reads, declared as data: every attribute key, the exact shape of its
value, and what it becomes in the stored trace.

Each convention module declares its `ATTRIBUTES` (and how it is detected, `DETECTED`)
beside the reader that uses those keys; the connect-your-app page's per-convention
attribute tables are generated from them (`ragpulse/docs/attributes_page.py`), and
`tests/collector/test_declared_attributes.py` fails when a module reads a key it does not
declare, so the page cannot drift from the decoders.

A key may hold placeholders: `{i}` / `{j}` a list index (`retrieval.documents.{i}.…`,
OTel's flattened lists), `<name>` any name (`ragpulse.tag.<name>`), `*` any suffix
(`gen_ai.usage.*`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

SPAN: Final = "span"
RESOURCE: Final = "resource"
EVENT: Final = "span event"
LOG_RECORD: Final = "log record"
EVENT_OR_RECORD: Final = "span event or log record"


def event(name: str) -> str:
    """`Attribute.on` for the attributes of span events named `name`."""
    return f"{EVENT}:{name}"


def log_record(name: str) -> str:
    """`Attribute.on` for the attributes of log records named `name`."""
    return f"{LOG_RECORD}:{name}"


def event_or_record(name: str) -> str:
    """`Attribute.on` for the attributes of span events or log records named `name`."""
    return f"{EVENT_OR_RECORD}:{name}"


@dataclass(frozen=True, slots=True)
class Attribute:
    """One attribute a convention reads."""

    key: str
    """The attribute key as the library writes it (with placeholders, see the module)."""
    value: str
    """The shape of its value, in Markdown (`string`, `int`, a JSON shape, ...)."""
    becomes: str
    """What it becomes in the stored trace (or what it decides), in Markdown."""
    on: str = SPAN
    """Where it is: `SPAN`, `RESOURCE`, or `event(name)` / `log_record(name)` /
    `event_or_record(name)`: the attributes of the span event or log record so named."""


@dataclass(frozen=True, slots=True)
class Declared:
    """A convention's declaration: its title, how it is detected, what it reads."""

    name: str
    """The convention's name (`Convention.name`), as counted on /metrics."""
    title: str
    detected: str
    attributes: tuple[Attribute, ...]
    not_keys: frozenset[str] = frozenset()
    """String literals of the module that look like attribute keys but are none (a path
    under `metadata._invalid`, a detection prefix): what the drift test lets pass."""
