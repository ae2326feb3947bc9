"""The alerting-at-every-volume benchmark (issue 40) keeps working: its traffic's per-minute
sums are what the product makes of the same traces, and a tiny run goes end to end through
a real Prometheus."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import numpy as np
import pytest

from benchmarks.alerting_traffic import METRICS, Drop
from benchmarks.alerting_volume_traffic import Frame, H, feed, hit_frame, hour, mean_share
from benchmarks.alerting_volumes import false_pages, main
from benchmarks.outcome_columns import OutcomeColumns, frame_from_columns
from collector.jobs.buckets.frame import BucketFrame
from collector.jobs.drift.detector import DriftConfig
from collector.settings import load_settings
from ragpulse.job_setup import drift_config

NEEDS_PROMETHEUS = pytest.mark.skipif(
    shutil.which("prometheus") is None or shutil.which("promtool") is None,
    reason="prometheus/promtool are not installed (Debian package prometheus)",
)


def test_the_sums_are_the_products_sums_of_the_same_traces() -> None:
    sums, columns = Frame(METRICS), OutcomeColumns(METRICS, ["tenant"])
    for h in range(6):
        made = hour(300, 7, h)
        sums.add(made)
        feed(columns, made, h)
    mine, theirs = sums.frame(), frame_from_columns(columns, 0.0, 6 * H)
    assert mine.metrics == theirs.metrics
    for frame in (mine, theirs):
        assert frame.n.sum() > 0

    assert _table(mine) == _table(theirs)


def _table(f: BucketFrame) -> dict[tuple[str, str, int], tuple[float, ...]]:
    rows = zip(f.metric, f.group, f.bucket, f.n, f.total, f.positives, f.log_total, strict=True)
    return {
        (f.metrics[m], f.groups[g].key, int(b)): (int(n), round(t, 9), int(p), round(lt, 9))
        for m, g, b, n, t, p, lt in rows
    }


def test_the_weekends_move_the_mix_and_the_volume() -> None:
    weekday = [hour(1200, 1, h) for h in range(24, 48)]  # a Tuesday
    saturday = [hour(1200, 1, h) for h in range(5 * 24, 6 * 24)]
    n_weekday = sum(x.ts.size for x in weekday)
    n_saturday = sum(x.ts.size for x in saturday)
    assert 0.4 < n_saturday / n_weekday < 0.6
    acme = [np.mean(np.concatenate([x.tenant for x in day]) == 0) for day in (weekday, saturday)]
    assert acme[0] > 0.45 and acme[1] < 0.35
    assert (
        abs(sum(mean_share(t) for t in ("acme", "globex", "initech", "umbrella", "hooli")) - 1)
        < 1e-9
    )


def test_a_drop_shows_in_the_hit_frame() -> None:
    frame = hit_frame(1200, 1, 48, Drop("hit_rate@1", 0.4, 24 * H, "acme"))
    acme = frame.group == 1
    before = acme & (frame.bucket < 24 * 60)
    after = acme & (frame.bucket >= 24 * 60)
    rate = [frame.positives[m].sum() / frame.n[m].sum() for m in (before, after)]
    assert abs(rate[0] - 0.75) < 0.03 and abs(rate[1] - 0.45) < 0.03


@NEEDS_PROMETHEUS
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_tiny_grid_runs_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = argparse.Namespace(volumes=[30.0], seeds=1, seed=1, step=24 * H)
    [week] = false_pages(args, _config(), tmp_path)[30.0]
    assert week.traces > 0 and ("page", "hit_rate@1", "") in week.worst
    out = capsys.readouterr().out
    assert "| 30/h | 0 | 0.00 |" in out
    assert main(["--skip-false", "--volumes", "120000", "--seeds", "1", "--drops", "0.4"]) == 0
    out = capsys.readouterr().out
    assert "| 120,000/h | hooli (1.3%) |" in out and "| 120,000/h | overall (100.0%) |" in out


def _config() -> DriftConfig:
    config = drift_config(load_settings())
    assert config is not None
    return config


def test_the_bound_in_the_traffic_counts_the_traces_that_arrive_after_the_drop() -> None:
    from benchmarks.alerting_volume_traffic import DAY, GROUND_TRUTH, rate_factor, shares
    from benchmarks.alerting_volumes import (
        best_delay,
        on_the_grid,
        traces_needed,
        traffic_delay,
    )

    config = drift_config(load_settings())
    assert config is not None
    at_night, at_peak = 8 * DAY + 2 * H, 8 * DAY + 14 * H  # a Tuesday at 02:00 and 14:00
    night = traffic_delay(4000, "hooli", 0.4, at_night, config)
    peak = traffic_delay(4000, "hooli", 0.4, at_peak, config)
    assert peak < best_delay(4000, "hooli", 0.4, config) < night
    # the expected ground-truth traces from the drop to the bound are the ones it needs
    ts = at_night + (np.arange(int(night * 3600)) + 0.5)
    expected = sum(4000 * GROUND_TRUTH * rate_factor(t) * shares(t)[4] / H for t in ts)
    assert expected == pytest.approx(traces_needed(4000, "hooli", 0.4, config), rel=2e-3)
    assert on_the_grid(0.004) == on_the_grid(300 / H) == pytest.approx(300 / H)
    assert on_the_grid(0.1) == pytest.approx(600 / H)
