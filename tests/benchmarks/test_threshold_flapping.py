"""The fixed-threshold rules on a steady week (issue 32, item 4), by a real Prometheus: the
point estimate of 240 labelled traces a day at a true accuracy of 0.90 crosses 0.85 and
fires; the interval's upper bound does not; a real drop to 0.75 fires either way."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchmarks.threshold_flapping import episodes_a_week

needs_prometheus = pytest.mark.skipif(
    shutil.which("promtool") is None or shutil.which("prometheus") is None,
    reason="Prometheus is not installed (Debian package prometheus)",
)


@pytest.mark.slow
@needs_prometheus
def test_a_steady_week_flaps_only_on_the_point_estimate(tmp_path: Path) -> None:
    found = episodes_a_week(0.90, 240.0, 6, 1, tmp_path)
    assert found["point estimate (before)"][0] > 0
    assert found["interval (shipped)"] == (0.0, 0.0)


@pytest.mark.slow
@needs_prometheus
def test_a_real_drop_still_fires_on_the_interval(tmp_path: Path) -> None:
    found = episodes_a_week(0.75, 240.0, 2, 1, tmp_path)
    assert found["interval (shipped)"][1] > 0.9
