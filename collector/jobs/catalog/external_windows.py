"""The `external` job's windows from its bucket sums, its names bounded.

The job stores every cleaned evaluation name a trace carries (`external:<name>`) as a
metric of its own in `job_outcomes` and `job_buckets`. Which names get series is decided
per run from the longest window's sums, like the label values (`labels.choose_kept`): the
trace count of a name is the sum of its counts `n` over every outcome (scored, skipped,
error) in the overall group, and the `max_names` most frequent keep series (ties by
name); the others fold into `external:other` (an application's own name `other` always
does).

`external:other` is the sums of the folded names added together: each folded result is
one value (a trace with two folded scores counts two values in `n`), its errors and skips
are counted per result alike. It is aggregated from the sums in every window (Student's t
interval); the kept names go through `bucket_aggregation.window_points` as every job's
metrics.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

from collector.jobs.buckets.stats import SCORED, TRACES, Sums
from collector.jobs.buckets.store import SUM_COLUMNS, WindowSums
from collector.jobs.buckets.window_points import foldings, window_points
from collector.jobs.buckets.window_source import WindowSource
from collector.jobs.buckets.window_sums import aggregates_from_sums
from collector.jobs.windows.aggregate import WindowAggregate
from collector.jobs.windows.labels import Folding, LabelLimits
from collector.jobs.windows.window import Window
from evaluators.signature import Signature

METRIC_LABEL = "metric"
"""The label the names' folding is counted under (`ragpulse_label_values_*`)."""
EXAMPLES = 10
"""Folded names a run reports by name (for the log)."""


@dataclass(frozen=True)
class NamesSpec:
    """How the names are bounded: how many keep series, and the pooled series' name."""

    max_names: int
    other: str


def name_counts(sums: WindowSums) -> dict[str, int]:
    """metric -> traces in the window that carry it: sum over outcomes of n, group ""."""
    counts: dict[str, int] = {}
    for (metric, grp, _outcome), value in sums.items():
        if metric != TRACES and grp == "" and value.n > 0:
            counts[metric] = counts.get(metric, 0) + value.n
    return counts


def choose_names(counts: dict[str, int], spec: NamesSpec) -> Folding:
    """The names that keep series: the `max_names` most frequent, ties by name (the pooled
    series' own name is never kept: what an application calls `other` is pooled)."""
    candidates = sorted(name for name in counts if name != spec.other)
    if len(candidates) > spec.max_names:
        candidates.sort(key=lambda name: (-counts[name], name))
    kept = frozenset(candidates[: spec.max_names])
    return Folding(METRIC_LABEL, len(counts), kept, len(candidates) - len(kept))


def pooled(sums: WindowSums, kept: frozenset[str], other: str) -> WindowSums:
    """The traces' counts, and every name not `kept` added into `other`."""
    out: WindowSums = {}
    for (metric, grp, outcome), value in sums.items():
        if metric == TRACES:
            out[(metric, grp, outcome)] = value
        elif metric not in kept:
            into = out.setdefault((other, grp, outcome), Sums())
            for c in SUM_COLUMNS:
                setattr(into, c, getattr(into, c) + getattr(value, c))
    return out


@dataclass(frozen=True)
class ExternalWindows:
    """A run's points, the names' folding, the group labels' foldings (the longest
    window's), and the first few folded names (sorted) for the log."""

    points: list[tuple[Window, WindowAggregate]]
    names: Folding
    labels: dict[str, Folding]
    examples: tuple[str, ...]


def external_points(
    session: Session,
    job: str,
    source: WindowSource,
    windows: Sequence[Window],
    group_labels: Sequence[str],
    limits: LabelLimits,
    at: float,
    spec: NamesSpec,
) -> ExternalWindows:
    """Every kept name's and `other`'s aggregate per window and group, the windows ending
    at `at`."""
    seen: dict[tuple[float, float | None], WindowSums] = {}
    read: Callable[[float, float | None], WindowSums] = source.sums

    def sums_of(start: float, end: float | None) -> WindowSums:
        if (start, end) not in seen:
            seen[(start, end)] = read(start, end)
        return seen[(start, end)]

    since = at - max(w.seconds for w in windows)
    counts = name_counts(sums_of(since, None))
    names = choose_names(counts, spec)
    kept_labels = foldings(sums_of, since, group_labels, limits)
    kept = sorted(names.kept)
    signatures = {name: Signature() for name in kept}
    points = window_points(
        WindowSource(sums_of, source.bins),
        windows,
        kept,
        {},
        signatures,
        kept_labels,
        at,
    )
    if names.folded:
        for window in windows:
            sums = pooled(sums_of(at - window.seconds, at), names.kept, spec.other)
            if (TRACES, "", SCORED) not in sums:
                continue
            items = aggregates_from_sums(sums, [spec.other], {}, {}, kept_labels)
            points.extend((window, item) for item in items)
    examples = tuple(sorted(name for name in counts if name not in names.kept)[:EXAMPLES])
    return ExternalWindows(points, names, kept_labels, examples)
