"""What a job publishes after a run: one `QualityPoint` per metric, window and group.

The jobs layer owns this shape and the `ResultsSink` it hands the points to, so it needs
nothing from the layers above it; the exporter's in-memory `ResultsCache` (a layer up)
implements the sink and serves the points to scrapes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from collector.store.models import MetricResult

if TYPE_CHECKING:
    # Annotations only: the exporter imports this module and needs none of these.
    from collector.jobs.windows.aggregate import WindowAggregate
    from collector.jobs.windows.window import Group, Window
    from evaluators.aggregate import Aggregate

_EMPTY: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class QualityPoint:
    """One metric value for one window and group, as exported."""

    metric: str
    window: str
    group_key: str
    value: float | None
    n: int
    ci_lower: float | None = None
    ci_upper: float | None = None
    job: str = ""
    group_labels: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    computed_at: float | None = None
    """When it was computed (epoch seconds): a back-filled point of the past never
    replaces a newer one in the exporter's cache."""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.metric, self.window, self.group_key)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled with its labels as a dict (a mapping proxy does not pickle): a
        back-fill's worker processes hand their points back."""
        return _unpickle_point, (
            self.metric, self.window, self.group_key, self.value, self.n, self.ci_lower,
            self.ci_upper, self.job, dict(self.group_labels), self.computed_at,
        )  # fmt: skip

    @classmethod
    def from_row(cls, row: MetricResult) -> QualityPoint:
        labels = {str(k): str(v) for k, v in (row.group_labels or {}).items()}
        return cls(
            metric=row.metric,
            window=row.window,
            group_key=row.group_key,
            value=row.value,
            n=row.n,
            ci_lower=row.ci_lower,
            ci_upper=row.ci_upper,
            job=row.job,
            group_labels=MappingProxyType(labels),
            computed_at=_epoch(row.computed_at),
        )


def _unpickle_point(
    metric: str,
    window: str,
    group_key: str,
    value: float | None,
    n: int,
    ci_lower: float | None,
    ci_upper: float | None,
    job: str,
    labels: dict[str, str],
    computed_at: float | None,
) -> QualityPoint:
    return QualityPoint(
        metric, window, group_key, value, n, ci_lower, ci_upper, job,
        MappingProxyType(labels), computed_at,
    )  # fmt: skip


def _epoch(ts: datetime) -> float:
    return (ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)).timestamp()


def quality_point(
    job: str, window: Window, group: Group, agg: Aggregate, computed_at: float | None = None
) -> QualityPoint:
    """The published form of one aggregate of `job`."""
    return QualityPoint(
        metric=agg.metric,
        window=window.name,
        group_key=group.key,
        value=agg.value,
        n=agg.n,
        ci_lower=agg.ci_lower,
        ci_upper=agg.ci_upper,
        job=job,
        group_labels=group.labels,
        computed_at=computed_at,
    )


def quality_points(
    job: str, points: Iterable[tuple[Window, WindowAggregate]], computed_at: float | None = None
) -> list[QualityPoint]:
    """The published form of a run's aggregates."""
    return [
        quality_point(job, window, item.group, item.aggregate, computed_at)
        for window, item in points
    ]


class ResultsSink(Protocol):
    """Where a job's points go after its run has committed."""

    def replace_job(self, job: str, points: Iterable[QualityPoint]) -> None:
        """Make `points` the whole output of `job` (groups that vanished are dropped)."""
        ...
