"""`ragpulse explain --metric hit_rate@1 --since 1h`: which slices a metric's change is."""

from __future__ import annotations

import argparse
import json
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from collector.settings import load_settings

if TYPE_CHECKING:
    from collector.store.history import History

SHOWN = 10
SHORTEST_SPLIT = timedelta(seconds=30)
"""The least span of scored traces a young store's split compares (seconds apart say
nothing about a change)."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="rank the slices (tenant, model, version, language, topic) by their share of a change",
        description="Compare a metric's per-trace scores in the last SINCE with the "
        "baseline before it (slices.baseline, default 7d) and rank the slices of one and "
        "two dimensions (slices.dimensions: tenant, model, version, language, topic: the "
        "id of the `ragpulse topics` topic, shown with its label) by their "
        "contribution to the change: share x delta (the slice got worse) plus mix (its "
        "share of the traffic moved), which add up to the overall change, with 95% "
        "intervals and Welch's test of each slice's own change. On a young store the "
        "baseline is the history there is before the window, said in the output; with less "
        "than the shortest evaluation window (1h) of it, or all of itself when shorter, the "
        "newest quarter of the scored traces is explained against the older ones instead, and "
        "the output says so first.",
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
    from collector.jobs.queries.explain import explain
    from collector.settings import parse_duration
    from collector.store.history import (
        have_text,
        needed,
        newest_share_start,
        short_of,
        shortest_window,
        shortfall,
        span_text,
        stored_history,
    )
    from collector.store.session import make_engine
    from ragpulse.metric_jobs import metric_target
    from ragpulse.store_check import require_migrated
    from ragpulse.time_window import window

    settings = load_settings(args.config)
    target = metric_target(settings, args.metric)
    since, until = window(args.since, args.until)
    asked = args.baseline or settings.slices.baseline
    try:
        baseline = parse_duration(asked)
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
    span = timedelta(seconds=baseline)
    minimum = shortest_window(settings.scheduler.windows)
    fallback: str | None = None
    asked_until = until
    try:
        with Session(engine) as session:
            history = stored_history(session, jobs=target.jobs, until=until)
            if short_of(history, since - span, since, minimum):
                what = f"the {asked} baseline before the {args.since} window"
                missing = f"{args.metric}: {shortfall(history, until, what, span, minimum)}"
                split = young_split(
                    history,
                    newest_share_start(session, jobs=target.jobs, until=until, share=0.25),
                )
                if split is None:
                    print(f"{missing}; {_wait(settings)}")
                    return 1
                fallback = (
                    f"{missing}.\n  Explained with the history there is: the newest quarter "
                    f"of the scored traces (the last {span_text(split[1] - split[0])}, to "
                    f"{split[1]:%H:%M:%S} UTC) against the older ones ({span_text(split[2])}); "
                    f"the {args.since} window and {asked} baseline work once "
                    f"{span_text(needed(span, minimum))} of history precedes the window"
                )
                since, until, span = split
            found = explain(
                session,
                jobs=target.jobs,
                metric=target.metric,
                since=since,
                until=until,
                baseline=span,
                dimensions=dimensions,
                max_values=settings.slices.max_values,
            )
            if found is not None and "topic" in dimensions:
                from collector.store.topics import topic_names

                found = found.named(topic_names(session))
    finally:
        engine.dispose()
    if found is None:
        if fallback is not None:
            print(
                f"{args.metric}: {have_text(history, asked_until)}, too few scored "
                f"traces yet to compare two parts of it; {_wait(settings)}"
            )
        else:
            print(
                f"{args.metric}: too few scored traces in the window or the baseline to "
                "explain a change (try a longer --since, or `ragpulse jobs run`)"
            )
        return 1
    shown = found.slices[: args.top]
    start = found.baseline_since
    if history.first is not None and history.first > start:
        start = history.first
    short_baseline = start > found.baseline_since
    note = found.mix_note(shown)
    if args.json:
        print(
            json.dumps(
                {
                    "metric": found.metric,
                    "headline": found.headline(),
                    "baseline_from": start.isoformat(),
                    "baseline_asked": asked,
                    "window_from": found.since.isoformat(),
                    "window_until": found.until.isoformat(),
                    "history_note": fallback,
                    "mix_note": note,
                    "window_mean": found.window_mean,
                    "baseline_mean": found.baseline_mean,
                    "delta": found.delta,
                    "n_window": found.n_window,
                    "n_baseline": found.n_baseline,
                    "slices": [
                        {"slice": dict(c.slice), "name": c.name, **_fields(c)} for c in shown
                    ],
                },
                ensure_ascii=False,
            )
        )
        return 0
    if fallback is not None:
        print(fallback)
    print(found.headline())
    # seconds when the periods are minutes long (a young store)
    stamp = "%Y-%m-%d %H:%M" if found.until - start >= timedelta(hours=2) else "%Y-%m-%d %H:%M:%S"
    baseline_text = (
        f"the {span_text(found.since - start)} of history before the window, {asked} asked: "
        if short_baseline
        else ""
    )
    print(
        f"  window n={found.n_window}, baseline n={found.n_baseline} ({baseline_text}"
        f"{start:{stamp}} – {found.since:{stamp}} UTC)"
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


def young_split(
    history: History, newest: datetime | None
) -> tuple[datetime, datetime, timedelta] | None:
    """(since, until, baseline) that fit a store too young for the spans asked: its newest
    quarter of scored traces (from `newest`, `newest_share_start`) against the older ones;
    None while the scored traces span less than `SHORTEST_SPLIT`. The newest scored trace
    ends it, not now: the jobs score new traffic a run behind, so the last minute holds
    few scored traces."""
    if history.first is None or history.last is None or newest is None:
        return None
    if history.last - history.first < SHORTEST_SPLIT or newest <= history.first:
        return None
    until = history.last + timedelta(microseconds=1)
    return newest, until, newest - history.first


def _wait(settings: Any) -> str:
    """What to do on a store with (nearly) nothing scored yet."""
    return (
        f"the jobs score new traffic every {settings.scheduler.interval_s:g}s: run it again "
        "in a minute or two"
    )


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
