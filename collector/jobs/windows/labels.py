"""Bounded label values: trace content may not choose how many series Prometheus gets.

Group labels (`tenant`, ...) take their values from trace tags, which any application
that writes to the topic controls. Before a value becomes a label it is made safe
(`clean_value`: Unicode NFC, control and format characters out, whitespace runs made one
space, at most `max_length` characters), and per label at most `max_values` distinct
values are kept (`choose_kept`): an operator's allow-list when one is set, else the most
frequent values over the job's longest window, ties broken by the value, so replicas and
replays choose alike. Every other value is folded into the group `other`, whose aggregate
is computed from exactly the folded traces.
"""

from __future__ import annotations

import hashlib
import logging
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

OTHER = "other"
"""The label value every folded value becomes (a tag whose value is `other` counts there)."""

DEFAULT_MAX_VALUES = 50
DEFAULT_MAX_LENGTH = 128
_DROP = frozenset({"Cc", "Cf", "Cs", "Co", "Cn"})
_SPACES = re.compile(r"\s+")


def clean_value(value: Any, max_length: int = DEFAULT_MAX_LENGTH) -> str | None:
    """A tag value made fit to be a label value, or None when nothing is left of it.

    Whitespace (newlines and tabs included) becomes single spaces; other control, format,
    surrogate, private-use and unassigned characters are removed; a value longer than
    `max_length` keeps its beginning plus `~` and 8 hex digits of a hash of the whole,
    so two long values that differ only at the end stay two values. Idempotent.
    """
    text = value if isinstance(value, str) else str(value)
    if (
        len(text) <= max_length
        and text.isprintable()
        and text.strip() == text
        and "  " not in text
        and unicodedata.is_normalized("NFC", text)
    ):
        return text or None
    kept = []
    for ch in unicodedata.normalize("NFC", text):
        if ch.isspace():
            kept.append(" ")
        elif unicodedata.category(ch) not in _DROP:
            kept.append(ch)
    text = _SPACES.sub(" ", "".join(kept)).strip()
    if len(text) > max_length:
        digest = hashlib.blake2b(text.encode("utf-8"), digest_size=4).hexdigest()
        text = text[: max_length - 9].rstrip() + "~" + digest
    return text or None


@dataclass(frozen=True, slots=True)
class LabelPolicy:
    """How many values of one label may become series, or exactly which."""

    max_values: int = DEFAULT_MAX_VALUES
    allow: frozenset[str] | None = None
    """The operator's allow-list: only these values are kept (all of them), if set."""


_NO_POLICIES: Mapping[str, LabelPolicy] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class LabelLimits:
    """The bounds of every group label: a default policy, per-label ones, the length cap."""

    default: LabelPolicy = LabelPolicy()
    per_label: Mapping[str, LabelPolicy] = field(default_factory=lambda: _NO_POLICIES)
    max_length: int = DEFAULT_MAX_LENGTH

    def policy(self, label: str) -> LabelPolicy:
        return self.per_label.get(label, self.default)

    def bound(self, label: str) -> int:
        """Series a label can have per metric and window: kept values + `other`."""
        policy = self.policy(label)
        kept = len(policy.allow) if policy.allow is not None else policy.max_values
        return kept + 1


@dataclass(frozen=True, slots=True)
class Folding:
    """What `choose_kept` decided for one label in one run."""

    label: str
    seen: int
    """Distinct values in the window."""
    kept: frozenset[str]
    """Values that stay series of their own."""
    capped: int
    """Values folded because more than `max_values` were seen (not by an allow-list)."""

    @property
    def folded(self) -> int:
        return self.seen - len(self.kept)


def choose_kept(
    label: str, values: Sequence[str], counts: np.ndarray, policy: LabelPolicy
) -> Folding:
    """The values of `label` that keep series of their own, given each value's count.

    With an allow-list: the allowed values. Otherwise the `max_values` most frequent,
    ties by value. `values[i]` has `counts[i]` traces; values with count 0 are not seen.
    """
    counts = np.asarray(counts, dtype=np.int64)
    present = np.flatnonzero(counts > 0)
    names = [values[i] for i in present.tolist()]
    candidates = [i for i, name in enumerate(names) if name != OTHER]
    if policy.allow is not None:
        kept = frozenset(names[i] for i in candidates if names[i] in policy.allow)
        return Folding(label, len(names), kept, 0)
    if len(candidates) <= policy.max_values:
        return Folding(label, len(names), frozenset(names[i] for i in candidates), 0)
    order = sorted(candidates, key=lambda i: (-int(counts[present[i]]), names[i]))
    kept = frozenset(names[i] for i in order[: policy.max_values])
    return Folding(label, len(names), kept, len(candidates) - len(kept))


def folded_value(value: str, kept: frozenset[str]) -> str:
    """`value` itself when it is kept, else `OTHER`."""
    return value if value in kept else OTHER


def warn_folding(job: str, before: Sequence[Folding], now: Sequence[Folding]) -> None:
    """One warning when a label of `job` starts folding values past its bound (not every
    run), one line when it stops."""
    was = {f.label: f.capped for f in before}
    for f in now:
        if f.capped and not was.get(f.label):
            logger.warning(
                "job %s: label %r has %d distinct values in the longest window, more than "
                "its bound: the %d most frequent stay series, %d fold into %r "
                "(labels.max_values, or an allow-list in labels.per_label)",
                job,
                f.label,
                f.seen,
                len(f.kept),
                f.capped,
                OTHER,
            )
        elif not f.capped and was.get(f.label):
            logger.info("job %s: label %r no longer folds values", job, f.label)
