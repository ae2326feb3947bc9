"""Why an empty panel of the report is empty: the panel's own `noValue` text, or the reason
a caller found from the facts at the report's time (a job that has not run yet, no judge
configured, no version on any series), and a few words of it for the summary's counts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class EmptyReason:
    """What an empty panel says (`text`) and the few words it is counted under (`short`)."""

    short: str
    text: str


Reasons = Callable[[Sequence[str]], EmptyReason | None]
"""The panel's PromQL (before its variables are filled in) -> the true reason it is empty,
or None to keep the panel's own text."""

NO_DATA = EmptyReason("no data", "no data")


def from_text(no_value: str | None) -> EmptyReason:
    """The reason a panel's `noValue` gives: its words before the first colon, counted."""
    if not no_value:
        return NO_DATA
    head = no_value.split(":", 1)[0].strip()
    return EmptyReason(head[:1].lower() + head[1:], no_value)


def resolve(exprs: Sequence[str], no_value: str | None, reasons: Reasons | None) -> EmptyReason:
    """The caller's reason when it has one, else the panel's own text."""
    found = reasons(exprs) if reasons is not None and exprs else None
    return found if found is not None else from_text(no_value)


def counted(shorts: Iterable[str]) -> str:
    """The reasons counted, most frequent first: `7 waiting for the first run, 5 no judge
    configured`."""
    return ", ".join(f"{n} {short}" for short, n in Counter(shorts).most_common())
