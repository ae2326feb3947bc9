"""The drift detectors' highest score per series over a steady week, without Prometheus.

A quick companion of `benchmarks.alerting`'s false-alarm part: the same simulated fortnight
(`benchmarks.alerting_traffic`), the shipped detectors evaluated every `--step` seconds
over the second week, and for each (detector, metric, group) the largest S/h seen. A page
rule fires when a `page` score reaches 1, so the count of page series at 1 or more is an
upper bound of the week's page episodes (one series can fire more than once only when it
falls back below 1 in between, which this does not count). It reads one `BucketFrame` of
the fortnight (`drift_points_from_frame` keeps each run's window).

Run: `.venv/bin/python -m benchmarks.alerting_scan 1200 --step 3600`.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from benchmarks.alerting import FACTS, WEEK
from benchmarks.alerting_traffic import H, simulate
from benchmarks.outcome_columns import frame_from_columns
from collector.jobs.drift.sums import drift_points_from_frame
from collector.settings import load_settings
from ragpulse.job_setup import drift_config


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("per_hour", type=float)
    parser.add_argument("--step", type=float, default=600.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--top", type=int, default=8)
    args = parser.parse_args(argv)
    config = drift_config(load_settings())
    if config is None:
        raise SystemExit("alerting is disabled in the settings")
    began = time.perf_counter()
    columns, n = simulate(args.per_hour, 14 * 24, args.seed)
    frame = frame_from_columns(columns, 0.0, 14 * 24 * H)
    worst: dict[tuple[str, str, str], float] = {}
    at = WEEK
    while at <= 2 * WEEK:
        made = drift_points_from_frame(frame, FACTS, at, WEEK, config)
        for window, item in made:
            if window.name.startswith("drift:") and item.aggregate.value is not None:
                key = (window.name, item.aggregate.metric, item.group.key or "overall")
                worst[key] = max(worst.get(key, 0.0), item.aggregate.value)
        at += args.step
    print(f"{args.per_hour:.0f}/h, {n} traces, every {args.step:.0f} s "
          f"({time.perf_counter() - began:.0f} s)")  # fmt: skip
    for key, value in sorted(worst.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"  {value:5.2f}  {' '.join(key)}")
    for detector in ("drift:page", "drift:ticket"):
        mine = [v for (d, _, _), v in worst.items() if d == detector]
        print(f"  {detector}: {sum(v >= 1 for v in mine)} of {len(mine)} series reached 1")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
