"""The behaviour-preservation dump is deterministic: two dumps of one revision on the same
(tiny) traffic are the same bytes, so any difference `--compare` finds is the code's."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.exported_series import main, masked, read_traffic, write_traffic

pytestmark = pytest.mark.timeout(600)


def test_the_traffic_file_is_deterministic(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert write_traffic(a, 1, 2, seed=7) == write_traffic(b, 1, 2, seed=7) > 100
    assert a.read_bytes() == b.read_bytes()
    assert list(read_traffic(a)) == [0]


def test_wall_clock_values_are_masked_and_the_rest_kept() -> None:
    exposition = "\n".join(
        [
            "# HELP x y",
            'ragpulse_metric_value{metric="mrr",window="1h"} 0.5',
            'ragpulse_job_duration_seconds_sum{job="ux"} 1.234',
            'ragpulse_job_last_success_timestamp_seconds{job="ux"} 1.7e9',
            "process_cpu_seconds_total 3.0",
        ]
    )
    assert masked(exposition) == [
        "process_cpu_seconds_total <t>",
        'ragpulse_job_duration_seconds_sum{job="ux"} <t>',
        'ragpulse_job_last_success_timestamp_seconds{job="ux"} <t>',
        'ragpulse_metric_value{metric="mrr",window="1h"} 0.5',
    ]


@pytest.mark.slow
def test_two_dumps_of_one_revision_are_identical(tmp_path: Path) -> None:
    traffic = tmp_path / "traffic.jsonl"
    assert main(["--write-traffic", str(traffic), "--days", "2", "--rounds-per-day", "2"]) == 0
    dumps = []
    for name in ("first.txt", "second.txt"):
        out = tmp_path / name
        assert main(["--traffic", str(traffic), "--out", str(out), "--step", "6h"]) == 0
        dumps.append(out.read_text())
    assert dumps[0] == dumps[1]
    lines = dumps[0].splitlines()
    assert "# /metrics" in lines and "# backfill (OpenMetrics)" in lines
    values = [line for line in lines if line.startswith("ragpulse_metric_value{")]
    assert len(values) > 100, len(values)
    backfilled = lines[lines.index("# backfill (OpenMetrics)") + 1 :]
    assert len(backfilled) > 100, len(backfilled)
