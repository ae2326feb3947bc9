"""`ragpulse plan --detect 10% --within 3h`: detectable drops and what a target needs."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from collector.settings import load_settings


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="what drops today's traffic can page on, and what a target would need",
        description="From the live volumes in metric_results (the newest 7d values), print "
        "for every per-trace metric and group: traces an hour, the smallest relative drop "
        "the paging detector catches within --within on average, the traces an hour needed "
        "to catch a drop of --detect within --within, and for LLM-judge metrics the judge "
        "sampling rate (RAGPULSE_SAMPLING__JUDGE) that gives them and the judge's cost a "
        "day at that rate. The detector's false-page budget is RAGPULSE_ALERTING__"
        "FALSE_PAGES_PER_WEEK. Volumes are per hour of the history behind the 7d values; "
        "a store younger than the shortest evaluation window (1h) gets no volume yet, "
        "rather than one extrapolated from minutes.",
    )
    parser.add_argument("--detect", default="10%", help="relative drop to catch (default 10%%)")
    parser.add_argument("--within", default="1h", help="how fast (default 1h)")
    parser.add_argument("--metric", action="append", help="only these metrics (repeatable)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.set_defaults(func=run)


def _share(text: str) -> float:
    from collector.errors import UserError

    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise UserError(f"--detect {text!r}: give a share such as 10% or 0.1") from None
    if not 0 < value < 1:
        raise UserError(f"--detect {text!r}: the drop must be between 0 and 100%")
    return value


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _history_lines(rows: list[Any]) -> list[str]:
    """The line saying the shortest lack of history ("4 min of history; the 7d volume
    needs ≥ 1h"), else one saying when the volumes stand on less than a week."""
    from collector.store.history import span_text
    from ragpulse.planning import NOT_DETECTABLE

    short = [r for r in rows if r.note and r.note != NOT_DETECTABLE]
    if short:
        least = min(short, key=lambda r: r.history_s or 0.0)
        return [f"{least.note}: 'now/h', 'pages on' and the judge rate are left out until then"]
    spans = [r.history_s for r in rows if r.history_s is not None]
    if spans and min(spans) < 7 * 86400 - 3600:
        return [
            f"volumes per hour over the {span_text(timedelta(seconds=min(spans)))} of "
            "history (the 7d window is not full yet)"
        ]
    return []


def run(args: argparse.Namespace) -> int:
    from collector.errors import UserError
    from collector.settings import parse_duration
    from collector.store.session import make_engine, make_session_factory
    from ragpulse.planning import NOT_DETECTABLE, plan
    from ragpulse.store_check import require_migrated

    detect = _share(args.detect)
    try:
        within = parse_duration(args.within)
    except ValueError as exc:
        raise UserError(f"--within: {exc} (e.g. 3h)") from None
    settings = load_settings(args.config)
    url = settings.database.url.get_secret_value()
    require_migrated(url)
    engine = make_engine(url)
    try:
        with make_session_factory(engine)() as session:
            rows = plan(session, settings, detect, within, datetime.now(UTC))
    except ValueError as exc:
        raise UserError(str(exc)) from None
    finally:
        engine.dispose()
    if args.metric:
        rows = [r for r in rows if r.metric in set(args.metric)]
    if args.json:
        print(json.dumps([r.__dict__ for r in rows], indent=2))
        return 0
    if not rows:
        print("no 7d values yet: run the jobs (or `ragpulse jobs backfill`) first")
        return 0
    for line in _history_lines(rows):
        print(line)
    print(
        f"To page on a {_pct(detect)} drop within {args.within} "
        f"(false pages budget {settings.alerting.false_pages_per_week}/week):\n"
    )
    header = f"{'metric':24s} {'group':22s} {'now/h':>8s} {'pages on':>9s} {'needs/h':>9s}"
    print(header + f" {'judge rate':>10s} {'judge $/day':>11s}")
    for r in rows:
        needed = "-" if r.needed_per_hour is None else f"{r.needed_per_hour:.0f}"
        now = "-" if r.per_hour is None else f"{r.per_hour:.1f}"
        pages = "none" if r.note == NOT_DETECTABLE else _pct(r.detectable)
        rate = _pct(r.judge_rate) if r.judged else ""
        if r.judge_rate is not None and r.judge_rate > 1:
            rate = ">100%"
        usd = f"{r.judge_usd_per_day:.2f}" if r.judge_usd_per_day is not None else ""
        print(
            f"{r.metric:24s} {r.group or '(overall)':22s} {now:>8s} "
            f"{pages:>9s} {needed:>9s} {rate:>10s} {usd:>11s}"
        )
    print(
        "\n'pages on': the smallest drop paged within the delay at today's volume ('none': "
        "no drop under 100% is); "
        "'judge rate': the sampling.judge rate giving 'needs/h' judged traces (>100%: "
        "not reachable by sampling alone)."
    )
    return 0
