"""The alerting-at-every-volume benchmark (issue 40) keeps working: its traffic's per-minute
sums are what the product makes of the same traces, its `auto` mode switches path where
the job would, and a tiny run goes end to end through a real Prometheus."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import numpy as np
import pytest

from benchmarks.alerting_traffic import METRICS, Drop
from benchmarks.alerting_volume_traffic import WEEK, Frame, H, feed, hit_frame, hour, mean_share
from benchmarks.alerting_volumes import false_pages, main, paths
from collector.jobs.bucket_drift import DRIFT_ROWS_MAX
from collector.jobs.bucket_frame import BucketFrame, frame_from_columns
from collector.jobs.drift import DriftConfig
from collector.jobs.outcomes import OutcomeColumns
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


def test_auto_takes_the_rows_below_the_jobs_bound_and_the_sums_above() -> None:
    steps = np.arange(WEEK, WEEK + 4 * H, H)
    assert paths(30, 1, "auto", steps, 10**9) == ["rows"] * 4
    assert paths(30, 1, "auto", steps, 0) == ["buckets"] * 4
    assert paths(30, 1, "buckets", steps, 10**9) == ["buckets"] * 4
    week = sum(hour(30, 1, h).ts.size for h in range(169))
    assert paths(30, 1, "auto", steps, week - 60) == ["buckets"] * 4  # 7 days hold ~5,040


def test_a_backfill_takes_the_sums_at_a_volume_where_the_live_job_takes_the_rows() -> None:
    """At 1,200/h a 7-day window holds ~201,600 traces (rows: <= `DRIFT_ROWS_MAX`), but a
    back-fill of a week decides once over the 14 days its steps read (~403,000: sums)."""
    steps = np.arange(WEEK, 2 * WEEK + 1, 24 * H)
    assert set(paths(1200, 1, "auto", steps, DRIFT_ROWS_MAX)) == {"rows"}
    assert paths(1200, 1, "backfill", steps, DRIFT_ROWS_MAX) == ["buckets"] * steps.size
    assert paths(30, 1, "backfill", steps, DRIFT_ROWS_MAX) == ["rows"] * steps.size


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
    args = argparse.Namespace(
        volumes=[30.0], modes=["auto", "rows", "buckets"], seeds=1, seed=1, step=24 * H,
        rows_max=10**9, rows_volume_max=4000.0,
    )  # fmt: skip
    found = false_pages(args, _config(), tmp_path)
    [auto], [rows], [buckets] = (found[(30.0, mode)] for mode in ("auto", "rows", "buckets"))
    assert auto is rows  # every run took the rows: the same week, computed once
    assert rows.path == "rows" and buckets.path == "buckets"
    key = ("page", "hit_rate@1", "")
    assert rows.worst[key] == pytest.approx(buckets.worst[key], abs=1e-9)  # binary: exact
    assert rows.traces == buckets.traces > 0
    out = capsys.readouterr().out
    assert "| 30/h | auto (rows) |" in out and "| 30/h | buckets (buckets) |" in out
    assert main(["--skip-false", "--volumes", "120000", "--seeds", "1", "--drops", "0.4"]) == 0
    out = capsys.readouterr().out
    assert "| 120,000/h | hooli (1.3%) |" in out and "| 120,000/h | overall (100.0%) |" in out


def _config() -> DriftConfig:
    config = drift_config(load_settings())
    assert config is not None
    return config
