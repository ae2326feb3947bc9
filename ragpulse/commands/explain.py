"""`ragpulse explain --metric hit_rate@1 --since 1h`: which slices a metric's change is."""

from __future__ import annotations

import argparse
import json
from datetime import timedelta
from typing import Any

from collector.settings import load_settings

SHOWN = 10


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="rank the slices (tenant, model, version, language) by their share of a change",
        description="Compare a metric's per-trace scores in the last SINCE with the "
        "baseline before it (slices.baseline, default 7d) and rank the slices of one and "
        "two dimensions (slices.dimensions: tenant, model, version, language) by their "
        "contribution to the change: share x delta (the slice got worse) plus mix (its "
        "share of the traffic moved), which add up to the overall change, with 95% "
        "intervals and Welch's test of each slice's own change.",
        epilog="example:\n  ragpulse explain --metric hit_rate@1 --since 1h\n"
        "  hit_rate@1 fell 0.12 (0.61 -> 0.49); 80% of the drop is tenant acme, version v7",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--metric", required=True, metavar="NAME", help="e.g. hit_rate@1")
    parser.add_argument("--since", default="1h", metavar="DURATION", help="window (default 1h)")
    parser.add_argument("--until", metavar="ISO-TIME", help="end of the window (default now)")
    parser.add_argument(
        "--baseline", metavar="DURATION", help="baseline before the window (default 7d)"
    )
    parser.add_argument(
        "--dimensions", metavar="A,B", help="slice dimensions (default: slices.dimensions)"
    )
    parser.add_argument("--top", type=int, default=SHOWN, help=f"slices shown (default {SHOWN})")
    parser.add_argument("--json", action="store_true", help="the whole ranking as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from sqlalchemy.orm import Session

    from collector.errors import UserError
    from collector.jobs.explain import explain
    from collector.settings import parse_duration
    from collector.store.session import make_engine
    from ragpulse.metric_jobs import metric_target
    from ragpulse.store_check import require_migrated
    from ragpulse.time_window import window

    settings = load_settings(args.config)
    target = metric_target(settings, args.metric)
    since, until = window(args.since, args.until)
    try:
        baseline = parse_duration(args.baseline or settings.slices.baseline)
    except ValueError as exc:
        raise UserError(f"--baseline: {exc}") from None
    dimensions = (
        [d.strip() for d in args.dimensions.split(",") if d.strip()]
        if args.dimensions
        else list(settings.slices.dimensions)
    )
    url = settings.database.url.get_secret_value()
    require_migrated(url)
    engine = make_engine(url)
    try:
        with Session(engine) as session:
            found = explain(
                session,
                jobs=target.jobs,
                metric=target.metric,
                since=since,
                until=until,
                baseline=timedelta(seconds=baseline),
                dimensions=dimensions,
                max_values=settings.slices.max_values,
            )
    finally:
        engine.dispose()
    if found is None:
        print(
            f"{args.metric}: too few scored traces in the window or the baseline to explain "
            "a change (try a longer --since, or `ragpulse jobs run`)"
        )
        return 1
    shown = found.slices[: args.top]
    note = found.mix_note(shown)
    if args.json:
        print(
            json.dumps(
                {
                    "metric": found.metric,
                    "headline": found.headline(),
                    "mix_note": note,
                    "window_mean": found.window_mean,
                    "baseline_mean": found.baseline_mean,
                    "delta": found.delta,
                    "n_window": found.n_window,
                    "n_baseline": found.n_baseline,
                    "slices": [{"slice": dict(c.slice), **_fields(c)} for c in shown],
                },
                ensure_ascii=False,
            )
        )
        return 0
    print(found.headline())
    print(
        f"  window n={found.n_window}, baseline n={found.n_baseline} "
        f"({found.baseline_since:%Y-%m-%d %H:%M} – {found.since:%Y-%m-%d %H:%M} UTC)"
    )
    print(
        f"  {'slice':34s} {'share':>11s} {'mean':>15s} {'contribution [95% CI]':>28s} {'of Δ':>6s}"
    )
    for c in shown:
        mean_b = "-" if c.mean_baseline is None else f"{c.mean_baseline:.3f}"
        mean_w = "-" if c.mean_window is None else f"{c.mean_window:.3f}"
        print(
            f"  {c.name[:34]:34s} {c.share_baseline:4.0%}→{c.share_window:<4.0%} "
            f"{mean_b:>6s}→{mean_w:<6s} {c.contribution:+8.4f} [{c.low:+.4f}, {c.high:+.4f}] "
            f"{c.fraction:6.0%}"
        )
    if note is not None:
        print(f"  {note}")
    return 0


def _fields(c: Any) -> dict[str, Any]:
    return {
        k: getattr(c, k)
        for k in (
            "n_window",
            "n_baseline",
            "share_window",
            "share_baseline",
            "mean_window",
            "mean_baseline",
            "contribution",
            "low",
            "high",
            "fraction",
            "p_value",
        )
    }
