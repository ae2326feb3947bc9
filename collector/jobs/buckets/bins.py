"""A window's quantiles of the metrics read by quantile, from its bins.

Per window and group, the p50, p95 and p99 (`evaluators.quantiles.QUANTILES`) of each
quantile metric's scored values (`quantiles=True` in the registry: `latency_ms`), stored
and exported as the metrics `<metric>_p50`, `<metric>_p95`, `<metric>_p99` with n the
scored values and no interval.

From the bucket bins: the window's bins (`bucket_store.window_bins`, exact at its edges)
folded into the final groups as the sums are (`bucket_windows.final_group`: a folded
value's bins go to `label=other`), then `quantiles_from_bins`: within alpha = 1% of the
exact quantiles of the same values, at every window size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from collector.jobs.buckets.store import WindowBins
from collector.jobs.buckets.window_sums import final_group
from collector.jobs.windows.aggregate import WindowAggregate
from collector.jobs.windows.labels import Folding
from collector.jobs.windows.window import Group
from evaluators.aggregate import Aggregate
from evaluators.quantiles import quantile_names, quantiles_from_bins
from evaluators.signature import Signature


def _points(
    group: Group, metric: str, values: Sequence[float | None], n: int, signature: Signature
) -> list[WindowAggregate]:
    return [
        WindowAggregate(group, Aggregate(name, value, n, signature=signature))
        for name, value in zip(quantile_names(metric), values, strict=True)
    ]


def from_bins(
    bins: WindowBins,
    groups: Sequence[Group],
    metrics: Sequence[str],
    signatures: Mapping[str, Signature],
    foldings: Mapping[str, Folding],
) -> list[WindowAggregate]:
    """The quantiles of `metrics` in each of `groups` from the window's bins."""
    folded: dict[tuple[str, str], dict[int, int]] = {}
    for (metric, grp), found in bins.items():
        into = folded.setdefault((final_group(grp, foldings).key, metric), {})
        for index, count in found.items():
            into[index] = into.get(index, 0) + count
    out: list[WindowAggregate] = []
    for group in groups:
        for metric in metrics:
            found = folded.get((group.key, metric), {})
            indices = np.fromiter(found.keys(), dtype=np.int64, count=len(found))
            counts = np.fromiter(found.values(), dtype=np.int64, count=len(found))
            values = quantiles_from_bins(indices, counts)
            signature = signatures.get(metric, Signature())
            out += _points(group, metric, values, int(counts.sum()), signature)
    return out
