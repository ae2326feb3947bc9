"""The exporter's own bound on group label values, applied to every scrape's points.

The jobs fold values past a label's bound into `other` before they store results, so
normally nothing is left to do here. But the cache also holds what it loaded from
`metric_results` (rows written before the bound existed, by another version or another
writer), and one bad client there must not blow up `/metrics` either. The exporter cannot
re-aggregate (it has no per-trace data), so past the bound it drops the points of the
least-sampled values, keeping the values with the most samples (summed over metrics and
windows, ties by value) and always `other`. Label values are cleaned the same way the
jobs clean them, and a label set that occurs twice after cleaning is exported once.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from collector.jobs.run.publish import QualityPoint
from collector.jobs.windows.labels import OTHER, LabelLimits, choose_kept, clean_value


@dataclass(frozen=True, slots=True)
class Bounded:
    """The points to export with their label values, and per label what was kept."""

    points: list[tuple[list[str], QualityPoint]]
    """(label values: metric, window, then one per group label; the point)."""
    exported: dict[str, int] = field(default_factory=dict)
    """Distinct values per group label among the exported points."""
    dropped: dict[str, int] = field(default_factory=dict)
    """Distinct values per group label whose points were left out."""


def bound_points(
    points: Iterable[QualityPoint], group_labels: Sequence[str], limits: LabelLimits
) -> Bounded:
    """`points` with clean label values, at most the bound's values per label."""
    rows: list[tuple[list[str], QualityPoint]] = []
    samples: dict[str, dict[str, int]] = {label: defaultdict(int) for label in group_labels}
    for point in points:
        values = []
        for label in group_labels:
            raw = point.group_labels.get(label)
            value = clean_value(raw, limits.max_length) if raw is not None else None
            values.append(value or "")
            if value:
                samples[label][value] += point.n
        rows.append(([point.metric, point.window, *values], point))
    kept: dict[str, frozenset[str]] = {}
    dropped: dict[str, int] = {}
    for label in group_labels:
        names = sorted(samples[label])
        counts = np.array([samples[label][v] for v in names], dtype=np.int64) + 1
        folding = choose_kept(label, names, counts, limits.policy(label))
        kept[label] = folding.kept | ({OTHER} if OTHER in samples[label] else frozenset())
        dropped[label] = len(names) - len(kept[label])
    out: dict[tuple[str, ...], tuple[list[str], QualityPoint]] = {}
    for values, point in rows:
        if any(
            v and v not in kept[label] for label, v in zip(group_labels, values[2:], strict=True)
        ):
            continue
        key = tuple(values)
        if key not in out or point.n > out[key][1].n:
            out[key] = (values, point)
    exported = {label: len(kept[label]) for label in group_labels}
    return Bounded(list(out.values()), exported, dropped)
