"""`ragpulse report --prometheus URL --output report.html`: the dashboards as one HTML page."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from exporters.report.dashboards import Dashboard
    from exporters.report.empty import Reasons
    from exporters.report.live import ReportSummary
    from exporters.report.promapi import PromClient

EXIT_USAGE = 2


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report",
        help="draw every Grafana dashboard panel from Prometheus into one static HTML page",
        description="Query Prometheus's HTTP API with the PromQL of every panel of the "
        "Grafana dashboards (the same legends, units and thresholds as the JSON) and write "
        "a self-contained HTML page: one chart per panel, nothing fetched from the network "
        "when it is opened. For a look at the dashboards without a Grafana server.",
    )
    parser.add_argument(
        "--prometheus",
        metavar="URL",
        help="Prometheus base URL, e.g. http://127.0.0.1:9090 (default: the Prometheus of "
        "the `ragpulse demo` running from this folder)",
    )
    parser.add_argument(
        "--output", required=True, type=Path, metavar="FILE.html", help="HTML file to write"
    )
    parser.add_argument(
        "--dashboards",
        type=Path,
        action="append",
        metavar="PATH",
        help="dashboard JSON file or folder (repeatable; default: the shipped "
        "dashboards/grafana/dashboards)",
    )
    parser.add_argument(
        "--since",
        metavar="DURATION",
        help="time range ending now, e.g. 30m, 6h, 7d (default: each dashboard's own "
        "range, shortened to when Prometheus has data)",
    )
    parser.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="dashboard variable, e.g. --var tenant=bank (default: the dashboard's, "
        "tenant = All, the overall value)",
    )
    parser.add_argument(
        "--no-traces",
        action="store_true",
        help="leave out what is read from the configured database: the worst-traces table "
        "under each quality panel, the conversations, topics and knowledge-gap sections "
        "(by default they are read when it is reachable)",
    )
    parser.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="also list every empty panel with why it is empty (by default one line counts "
        "them by reason)",
    )
    parser.set_defaults(func=run)


def _fail(message: str) -> int:
    print(f"ragpulse report: {message}", file=sys.stderr)
    return EXIT_USAGE


def _demo_prometheus(args: argparse.Namespace) -> str | None:
    """The running demo's Prometheus (set by the CLI when it took the demo's settings)."""
    demo = getattr(args, "demo", None)
    return getattr(demo, "prometheus", None)


def own_slo_board(dashboards: list[Dashboard], config: str | None) -> list[Dashboard]:
    """The shipped dashboards with the SLO one drawn for the SLOs the settings declare (the
    shipped `slo.json` is the example's); unchanged when they declare none."""
    from grafana_foundation_sdk.cog.encoder import JSONEncoder

    from collector.settings import load_settings
    from dashboards.boards import slo_board
    from exporters.report.dashboards import SHIPPED, parse_dashboard

    specs = load_settings(config).slo.specs()
    if not specs:
        return dashboards
    shipped = SHIPPED / "slo.json"
    board = json.loads(json.dumps(slo_board(specs).build(), cls=JSONEncoder))
    return [parse_dashboard(board, shipped) if d.path == shipped else d for d in dashboards]


def run(args: argparse.Namespace) -> int:
    from exporters.report.dashboards import SHIPPED, DashboardError, load_dashboards
    from exporters.report.live import render_report
    from exporters.report.promapi import PromClient, PrometheusUnreachable, parse_duration

    chosen: dict[str, str] = {}
    for item in args.var:
        name, sep, value = item.partition("=")
        if not sep or not name:
            return _fail(f"--var wants NAME=VALUE, got {item!r}")
        chosen[name] = value
    try:
        since = parse_duration(args.since) if args.since else None
    except ValueError as exc:
        return _fail(f"--since: {exc}")
    try:
        dashboards = load_dashboards(args.dashboards or [SHIPPED])
    except DashboardError as exc:
        return _fail(str(exc))
    if not args.dashboards:
        dashboards = own_slo_board(dashboards, args.config)
    prometheus = args.prometheus or _demo_prometheus(args)
    if prometheus is None:
        return _fail(
            "--prometheus URL is needed (no `ragpulse demo` with a Prometheus runs from this "
            "folder)"
        )
    client = PromClient(prometheus)
    engine = None
    try:
        client.check()
        engine = None if args.no_traces else _store(args.config)
        drill = None
        now = time.time()
        topics = ""
        if engine is not None:
            from collector.settings import load_settings
            from ragpulse.report_conversations import store_conversations
            from ragpulse.report_drill import store_drill
            from ragpulse.report_topics import store_topics

            drill = store_drill(load_settings(args.config), engine)
            topics = store_conversations(engine, now, since) + store_topics(
                load_settings(args.config), engine, now, since
            )
        reasons = _reasons(client, args.config, engine, now, since)
        html, summary = render_report(
            client,
            dashboards,
            now=now,
            since=since,
            chosen=chosen,
            drill=drill,
            reasons=reasons,
            levels=threshold_levels,
            appendix=topics,
        )
        scraped = client.has_series("ragpulse_.+", now - (since or 86400.0), now)
    except PrometheusUnreachable as exc:
        return _fail(str(exc))
    finally:
        if engine is not None:
            engine.dispose()
    try:
        args.output.write_text(html, encoding="utf-8")
    except OSError as exc:
        return _fail(f"cannot write {args.output}: {exc.strerror or exc}")
    print(summary_line(summary, args.verbose))
    if args.verbose:
        for where, why in summary.empty:
            print(f"  empty: {where}: {why.text}")
    print(f"wrote {args.output} ({summary.panels} panels from {len(dashboards)} dashboards)")
    if summary.panels and not scraped:
        print(
            f"  no panel has data: does {prometheus} scrape ragpulse's /metrics "
            "(and have the evaluation jobs run yet)?",
            file=sys.stderr,
        )
    for where in summary.errors:
        print(f"  query failed: {where}", file=sys.stderr)
    return 0


def summary_line(summary: ReportSummary, verbose: bool = False) -> str:
    """The one line of what the page holds, e.g. `41 panels with data; 12 empty: 7 waiting
    for the first run, 5 no judge configured`."""
    from exporters.report.empty import counted

    line = f"{summary.with_data} panels with data"
    if summary.empty:
        line += f"; {len(summary.empty)} empty: {counted(why.short for _, why in summary.empty)}"
        if not verbose:
            line += " (--verbose lists them)"
    if summary.errors:
        line += f"; {len(summary.errors)} failed queries (below)"
    return line


def threshold_levels(metric: str) -> dict[float, str]:
    """The names of a metric's bands by the value each starts at (its panels' threshold
    lines), e.g. 0.9 -> "excellent"."""
    from dashboards.metrics_view import BANDS

    _text, bands = BANDS.get(metric, ("", []))
    return {b.start: b.label for b in bands if b.start is not None}


def _reasons(
    client: PromClient, config: str | None, engine: Any, now: float, since: float | None
) -> Reasons:
    """Why an empty panel is empty, from Prometheus (job runs, versions), the settings
    (judge, schedule) and the store (ground truth) when it is read."""
    from collector.settings import load_settings
    from ragpulse.report_reasons import EmptyReasons, gather, ground_truth_traces

    lookback = since or 86400.0
    settings = load_settings(config)
    truth = ground_truth_traces(engine, now, lookback) if engine is not None else None
    return EmptyReasons(gather(client, settings, now, lookback, truth))


def _store(config: str | None) -> Any:
    """An engine on the configured database if it is migrated and reachable, else None
    (the report then has the panels only, and says so)."""
    from collector.settings import load_settings
    from collector.store.session import make_engine
    from ragpulse.store_check import require_migrated

    settings = load_settings(config)
    url = settings.database.url.get_secret_value()
    try:
        require_migrated(url)
    except Exception as exc:
        print(f"  no worst-traces tables: the store is not usable ({exc})", file=sys.stderr)
        return None
    return make_engine(url)
