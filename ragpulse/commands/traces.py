"""`ragpulse traces --metric M --worst N --since 1h` and `ragpulse traces show ID`.

The on-call engineer's path from a number to the traces behind it: the worst-scoring
traces of a window (lowest for higher-is-better metrics, highest for lower-is-better
ones), or the newest failed evaluations (`--errors`), then one trace with every score it
got and what the judge said.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from collector.settings import load_settings

QUESTION_CHARS = 60


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "traces",
        help="the worst-scoring traces of a window, or one trace with all its scores",
        description="List the traces behind a metric's value: the lowest-scoring traces "
        "of the last SINCE (the highest for metrics where lower is better, such as "
        "latency or noise sensitivity), with time, tenant, score, question and what the "
        "judge said; or, with --errors, the newest traces whose evaluation failed and "
        "why. `ragpulse traces show ID` prints one trace with every score it got.",
        epilog="examples:\n  ragpulse traces --metric faithfulness --worst 20 --since 1h\n"
        "  ragpulse traces --metric hit_rate@1 --tenant acme --version v7 --json\n"
        "  ragpulse traces --metric hit_rate@1 --topic 12 --since 24h\n"
        "  ragpulse traces --metric faithfulness --errors\n  ragpulse traces show 4bf92f35",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--metric", metavar="NAME", help="metric, e.g. faithfulness, hit_rate@1")
    parser.add_argument(
        "--worst", type=int, default=20, metavar="N", help="how many traces (default 20)"
    )
    parser.add_argument(
        "--since", default="1h", metavar="DURATION", help="window ending now (default 1h)"
    )
    parser.add_argument(
        "--until", metavar="ISO-TIME", help="end of the window instead of now (UTC if naive)"
    )
    parser.add_argument("--tenant", help="only this tenant")
    parser.add_argument("--version", help="only this version (the `version` slice)")
    parser.add_argument(
        "--topic",
        metavar="ID",
        help="only traces of this topic (its id in `ragpulse topics`; the `topic` slice)",
    )
    parser.add_argument(
        "--slice",
        action="append",
        default=[],
        metavar="DIM=VALUE",
        help="only traces with this slice value, e.g. --slice model=gpt-4o (repeatable)",
    )
    parser.add_argument(
        "--errors", action="store_true", help="failed evaluations (with their error type)"
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    sub = parser.add_subparsers(dest="traces_command", metavar="ACTION")
    show = sub.add_parser(
        "show",
        help="one stored trace, whole, with every score it got and why",
        description="Print one stored trace: question, answer, each context (rank, id, "
        "url, score, a text excerpt), model, session and turn, user, usage, latency and "
        "its stages, cache, tags, metadata, the production judge, ground truth, human "
        "labels, feedback, the app's own evaluations, the slices and every score the "
        "jobs gave it with what the judge said. Exit 1 when no such trace is stored.",
    )
    show.add_argument("trace_id", metavar="ID")
    show.add_argument(
        "--json",
        action="store_true",
        dest="show_json",
        help="the whole stored trace as one JSON object (every key always present, null "
        "when unset; contexts' texts and the OTLP span summaries whole)",
    )
    show.set_defaults(func=show_trace)
    parser.set_defaults(func=list_worst)


def _filters(args: argparse.Namespace) -> dict[str, str]:
    from collector.errors import UserError

    where: dict[str, str] = {}
    for item in args.slice:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f"--slice wants DIM=VALUE, got {item!r}")
        where[key] = value
    if args.tenant:
        where["tenant"] = args.tenant
    if args.version:
        where["version"] = args.version
    if args.topic:
        where["topic"] = args.topic
    return where


def list_worst(args: argparse.Namespace) -> int:
    from collector.errors import UserError
    from collector.store.session import make_engine
    from collector.store.worst import worst_traces
    from ragpulse.metric_jobs import metric_target
    from ragpulse.store_check import require_migrated
    from ragpulse.time_window import window

    if not args.metric:
        raise UserError("--metric is required, e.g. `ragpulse traces --metric faithfulness`")
    if args.worst < 1:
        raise UserError(f"--worst must be at least 1, got {args.worst}")
    settings = load_settings(args.config)
    target = metric_target(settings, args.metric)
    since, until = window(args.since, args.until)
    url = settings.database.url.get_secret_value()
    require_migrated(url)
    engine = make_engine(url)
    try:
        from sqlalchemy.orm import Session

        with Session(engine) as session:
            finder: Any = worst_traces
            extra: dict[str, Any] = {"jobs": target.jobs}
            if target.metric.startswith("external:"):
                from collector.jobs.queries.external_traces import worst_external

                finder = worst_external
                extra = {
                    "max_name_length": settings.external.max_name_length,
                    "version_sources": tuple(settings.versions.sources),
                }
            found = finder(
                session,
                metric=target.metric,
                since=since,
                until=until,
                limit=args.worst,
                order="highest" if target.lower_is_better else "lowest",
                where=_filters(args),
                errors=args.errors,
                **extra,
            )
    finally:
        engine.dispose()
    if args.json:
        for row in found:
            print(json.dumps(row.as_json(), ensure_ascii=False))
        return 0
    what = "failed evaluations" if args.errors else target.ordering
    print(f"{args.metric}: {len(found)} {what}, {since:%Y-%m-%d %H:%M} – {until:%H:%M} UTC")
    if not found:
        print("  none in this window (try a longer --since, or check `ragpulse jobs list`)")
    for row in found:
        shown = "error" if row.value is None else f"{row.value:.3f}"
        question = " ".join((row.question or "").split())
        if len(question) > QUESTION_CHARS:
            question = question[: QUESTION_CHARS - 1] + "…"
        print(
            f"  {row.trace_id:34s} {row.timestamp:%m-%d %H:%M} {row.tenant or '-':12s} "
            f"{shown:>7s}  {question}"
        )
        said = row.error if row.value is None else row.reason
        if said:
            print(f"  {'':34s} {'└':>1s} {said}")
    return 0


def show_trace(args: argparse.Namespace) -> int:
    from sqlalchemy.orm import Session

    from collector.store.session import make_engine
    from ragpulse.store_check import require_migrated
    from ragpulse.trace_show import load_trace, render_detail, trace_json

    settings = load_settings(args.config)
    url = settings.database.url.get_secret_value()
    require_migrated(url)
    engine = make_engine(url)
    try:
        with Session(engine) as session:
            shown = load_trace(session, args.trace_id)
    finally:
        engine.dispose()
    if shown is None:
        print(f"ragpulse traces: no stored trace {args.trace_id!r}", file=sys.stderr)
        return 1
    if args.show_json or args.json:  # `traces --json show ID` as well as `traces show ID --json`
        print(json.dumps(trace_json(shown), ensure_ascii=False))
    else:
        print("\n".join(render_detail(shown)))
    return 0
