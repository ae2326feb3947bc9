"""Dataset metrics keep their last values only when a computation completed."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from collector.jobs.run.dataset import DatasetMetrics
from collector.jobs.windows.aggregate import WindowAggregate
from collector.jobs.windows.window import OVERALL, parse_windows
from evaluators.aggregate import Aggregate

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
HOUR = parse_windows(["1h"])[0]


def _point(metric: str) -> tuple[Any, WindowAggregate]:
    return HOUR, WindowAggregate(OVERALL, Aggregate(metric, 0.5, 2))


def test_a_computation_that_fails_half_way_leaves_no_partial_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    metrics = DatasetMetrics(None, None, [], None, 3600.0)  # type: ignore[arg-type]

    def complete(session: Any, now: datetime) -> Iterator[tuple[Any, WindowAggregate]]:
        yield _point("a")
        yield _point("b")

    def broken(session: Any, now: datetime) -> Iterator[tuple[Any, WindowAggregate]]:
        yield _point("a")
        raise RuntimeError("the embedder went away")

    monkeypatch.setattr(metrics, "_compute", complete)
    assert [p.aggregate.metric for _, p in metrics.points(None, NOW, changed=True)] == [
        "a",
        "b",
    ]
    monkeypatch.setattr(metrics, "_compute", broken)
    with pytest.raises(RuntimeError):
        metrics.points(None, NOW, changed=True)
    # nothing changed since: the last complete values, not the half-done ones
    kept = metrics.points(None, NOW, changed=False)
    assert [p.aggregate.metric for _, p in kept] == ["a", "b"]
