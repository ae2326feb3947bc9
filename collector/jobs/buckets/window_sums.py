"""A window's aggregates from its bucket sums: value, n, interval, skips and errors.

The value of a metric in a window is the mean of its scored values, sum / n, and its
skips and errors are counts: all exact from the sums (to the last bits of the summation
order). Intervals: Wilson for proportions; for means Student's t with n - 1 degrees of
freedom at every n, which becomes the normal interval smoothly as n grows, so a series'
interval never jumps when its volume or its job's crosses a bound. (A seeded bootstrap of
the values, which small windows used to take from their rows, approximates the t interval
for the means of bounded scores, and undercovers it below a few dozen values.)

Groups: overall, then `label=value` for each value with traces in the window whose value
is kept (`folds`), and `label=other` summing every folded value's buckets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from collector.jobs.buckets.stats import SCORED, TRACES, Sums
from collector.jobs.buckets.store import SUM_COLUMNS, WindowSums
from collector.jobs.windows.aggregate import WindowAggregate
from collector.jobs.windows.labels import OTHER, Folding
from collector.jobs.windows.window import OVERALL, Group, group_for
from evaluators.aggregate import Aggregate, t_interval, wilson_interval
from evaluators.signature import Signature


def _split(grp: str) -> tuple[str, str] | None:
    if not grp:
        return None
    label, _, value = grp.partition("=")
    return label, value


def final_group(grp: str, foldings: Mapping[str, Folding]) -> Group:
    """The group a stored group key counts in: itself, or `label=other` when folded."""
    parts = _split(grp)
    if parts is None:
        return OVERALL
    label, raw = parts
    folding = foldings.get(label)
    kept = folding is None or raw in folding.kept
    return group_for(label, raw if kept else OTHER)


def folded_sums(
    sums: WindowSums, foldings: Mapping[str, Folding]
) -> dict[str, tuple[Group, WindowSums]]:
    """The window's sums by final group key: a folded value's sums go to `label=other`."""
    out: dict[str, tuple[Group, WindowSums]] = {}
    groups: dict[str, Group] = {"": OVERALL}
    for (metric, grp, outcome), value in sums.items():
        group = groups.get(grp)
        if group is None:
            group = groups[grp] = final_group(grp, foldings)
        into = out.setdefault(group.key, (group, {}))[1].setdefault((metric, "", outcome), Sums())
        for c in SUM_COLUMNS:
            setattr(into, c, getattr(into, c) + getattr(value, c))
    return out


def _interval(sums: Sums, proportion: bool) -> tuple[float | None, float | None]:
    n = sums.n
    if proportion:
        return wilson_interval(min(max(sums.total, 0.0), float(n)), n)
    # a spread below the rounding of the sums counts as none, in whatever order the sums
    # were added (sharded workers add theirs in their own)
    return t_interval(n, sums.total, sums.squares)


def aggregate_sums(
    metric: str, sums: WindowSums, *, proportion: bool, signature: Signature
) -> Aggregate:
    """One metric's aggregate from one group's sums (keys with group key "")."""
    scored = sums.get((metric, "", SCORED))
    skips: dict[str, int] = {}
    errors: dict[str, int] = {}
    for (name, _grp, outcome), counted in sums.items():
        if name != metric or outcome == SCORED or counted.n <= 0:
            continue
        kind, _, reason = outcome.partition(":")
        (skips if kind == "skipped" else errors)[reason] = counted.n
    value: float | None = None
    lo: float | None = None
    hi: float | None = None
    n = 0
    if scored is not None and scored.n > 0:
        n = scored.n
        value = scored.total / n
        lo, hi = _interval(scored, proportion)
    return Aggregate(
        metric=metric,
        value=value,
        n=n,
        ci_lower=lo,
        ci_upper=hi,
        skipped=sum(skips.values()),
        errors=sum(errors.values()),
        skip_reasons=MappingProxyType(skips),
        error_types=MappingProxyType(errors),
        signature=signature,
    )


def aggregates_from_sums(
    sums: WindowSums,
    metrics: Sequence[str],
    proportions: Mapping[str, bool],
    signatures: Mapping[str, Signature],
    foldings: Mapping[str, Folding],
) -> list[WindowAggregate]:
    """Every metric's aggregate in every group with traces in the window."""
    by_group = folded_sums(sums, foldings)
    out = []
    for key in sorted(by_group):
        group, group_sums = by_group[key]
        traces = group_sums.get((TRACES, "", SCORED))
        if group is not OVERALL and (traces is None or traces.n <= 0):
            continue
        for metric in metrics:
            aggregate = aggregate_sums(
                metric,
                group_sums,
                proportion=proportions.get(metric, False),
                signature=signatures.get(metric, Signature()),
            )
            out.append(WindowAggregate(group, aggregate))
    return out


def trace_counts(sums: WindowSums) -> dict[str, dict[str, int]]:
    """label -> value -> traces in the window (what folding ranks values by)."""
    out: dict[str, dict[str, int]] = {}
    for (metric, grp, outcome), value in sums.items():
        parts = _split(grp)
        if metric != TRACES or outcome != SCORED or parts is None or value.n <= 0:
            continue
        out.setdefault(parts[0], {})[parts[1]] = value.n
    return out
