"""`ragpulse jobs run [NAME...]` and `ragpulse jobs list`: the scheduled jobs, once, now."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from collector.settings import load_settings


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "jobs",
        help="run the scheduled evaluation jobs once, now, or list them",
        description="Run the scheduled evaluation jobs once (all, or the named ones) over the "
        "configured database and print a summary; `list` names the jobs and their metrics.",
    )
    sub = parser.add_subparsers(dest="jobs_command", metavar="ACTION", required=True)
    run_parser = sub.add_parser(
        "run",
        help="run jobs once and print a summary",
        description="Run jobs once, now (incrementally: only traces new since the last run "
        "are evaluated), write metric_results and print one line per job. On PostgreSQL "
        "the run takes its share of each job's shards beside any other running worker.",
    )
    run_parser.add_argument("names", nargs="*", metavar="NAME", help="jobs to run (default: all)")
    run_parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    run_parser.set_defaults(func=run)
    list_parser = sub.add_parser("list", help="list the jobs and their metrics")
    list_parser.set_defaults(func=list_jobs)
    back = sub.add_parser(
        "backfill",
        help="compute the windows and drift detectors as they were at past times",
        description="Compute every job's per-trace metrics' windows and drift detectors as "
        "they were every STEP over the last SINCE, from the stored traces (scoring those "
        "not scored yet; judge jobs only use what was judged: no judge call is paid), and "
        "write them to metric_results with those times, so a new install or a new metric "
        "has its 7-day baseline at once. Dataset metrics (UX sessions, clusters, the "
        "production judge's confusion matrix) are not back-filled. With --output, the same "
        "series as /metrics are also written as timestamped OpenMetrics, to back-fill "
        "Prometheus: `promtool tsdb create-blocks-from openmetrics FILE DATA_DIR`.",
    )
    back.add_argument("names", nargs="*", metavar="NAME", help="jobs to back-fill (default: all)")
    back.add_argument("--since", default="7d", help="how far back (default 7d)")
    back.add_argument("--step", default="10m", help="time between computed points (default 10m)")
    back.add_argument(
        "--output", type=Path, metavar="FILE", help="also write the series as OpenMetrics"
    )
    back.add_argument(
        "--workers",
        type=_workers,
        default=None,
        metavar="N",
        help="processes computing the steps once the traces are scored (default: one per "
        "CPU, at most 8; PostgreSQL only, SQLite always uses one)",
    )
    back.add_argument("--no-progress", action="store_true", help="no progress bar")
    back.set_defaults(func=backfill_jobs)


def _workers(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"--workers must be a whole number >= 1, not {text!r}")
    return value


def default_workers() -> int:
    """One back-fill worker per CPU this process may use, at most 8."""
    usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    return max(1, min(8, len(usable) if usable is not None else os.cpu_count() or 1))


def list_jobs(args: argparse.Namespace) -> int:
    from collector.jobs.scheduler import definitions

    settings = load_settings(args.config)
    for name, definition in definitions(settings).items():
        metrics = ", ".join(definition.metrics) or "(no metric available)"
        print(f"{name:22s} {definition.description}\n{'':22s} metrics: {metrics}")
    return 0


def _report_json(report: Any) -> dict[str, Any]:
    """A `JobReport` as JSON: label folding as {label: {seen, kept, folded}}."""
    out = {k: v for k, v in report.__dict__.items() if k != "labels"}
    out["labels"] = {
        f.label: {"seen": f.seen, "kept": len(f.kept), "folded": f.folded} for f in report.labels
    }
    return out


def run(args: argparse.Namespace) -> int:
    from collector.errors import UserError
    from collector.jobs.scheduler import JUDGE_JOBS, build_runner
    from collector.store.session import make_engine, make_session_factory
    from exporters.evaluation_events import make_evaluation_events
    from ragpulse.job_setup import job_environment
    from ragpulse.judge import require_reachable, unreachable
    from ragpulse.slo_setup import catch_up, slo_recorder
    from ragpulse.store_check import require_migrated

    settings = load_settings(args.config)
    url = settings.database.url.get_secret_value()
    require_migrated(url)  # before connecting: SQLite would create an empty file
    engine = make_engine(url)
    factory = make_session_factory(engine)
    events = make_evaluation_events(settings, factory)
    recorder = slo_recorder(settings, factory)
    observers = [o for o in (events, recorder) if o is not None]
    try:
        if recorder is not None:
            catch_up(settings, factory)
        env = job_environment(settings, engine, observers=observers)
        try:
            runner = build_runner(settings, engine, env, names=args.names or None, once=True)
        except ValueError as exc:
            print(f"ragpulse jobs: {exc}")
            return 2
        if env.judge is not None and set(runner.jobs) & set(JUDGE_JOBS):
            require_reachable(settings.judge)
        # count as a live worker of every sharded job before the first claims, so several
        # `jobs run` started together share the shards (as `ragpulse run` does at start)
        runner.register()
        try:
            reports = runner.run_many()
        finally:
            runner.close()
    finally:
        if events is not None:
            events.shutdown()  # the runs' events are sent before the command exits
        engine.dispose()
    if args.json:
        print(json.dumps([_report_json(r) for r in reports], indent=2))
    else:
        for r in reports:
            line = (
                f"{r.job:22s} {r.status:8s} new={r.new_traces:<7d} "
                f"results={r.results:<6d} {r.seconds:6.2f}s"
            )
            print(line + (f"  {r.message}" if r.message else ""))
    if env.judge is not None and (problem := unreachable(env.judge)) is not None:
        raise UserError(problem)
    return 1 if any(r.status == "error" for r in reports) else 0


def backfill_jobs(args: argparse.Namespace) -> int:
    from collector.errors import UserError
    from collector.jobs.backfill.runner import backfill, steps
    from collector.jobs.scheduler import definitions
    from collector.settings import parse_duration
    from collector.store.session import make_engine
    from ragpulse.job_setup import job_environment, label_limits
    from ragpulse.store_check import require_migrated

    try:
        since, step = parse_duration(args.since), parse_duration(args.step)
    except ValueError as exc:
        raise UserError(f"--since/--step: {exc} (e.g. --since 7d --step 10m)") from None
    settings = load_settings(args.config)
    known = definitions(settings)
    unknown = sorted(set(args.names) - set(known))
    if unknown:
        raise UserError(f"unknown job(s) {', '.join(unknown)}; known: {', '.join(known)}")
    url = settings.database.url.get_secret_value()
    require_migrated(url)
    engine = make_engine(url)
    end = datetime.fromtimestamp(datetime.now(UTC).timestamp() // step * step, UTC)
    times = steps(end - timedelta(seconds=since), end, timedelta(seconds=step))
    writer = None
    if args.output is not None:
        from exporters.openmetrics import OpenMetricsWriter

        writer = OpenMetricsWriter(
            args.output, settings.scheduler.group_labels, label_limits(settings)
        )
    try:
        env = job_environment(settings, engine, judge=None)
        for name in args.names or list(known):
            bar = _bar(name, len(times), args.no_progress)
            try:
                report = backfill(
                    known[name],
                    env,
                    times,
                    emit=writer.add if writer is not None else None,
                    progress=_advance(bar) if bar is not None else None,
                    workers=args.workers or default_workers(),
                )
            finally:
                if bar is not None:
                    bar.close()
            line = (
                f"{report.job:22s} {report.status:8s} steps={report.steps:<5d} "
                f"results={report.results:<8d} scored={report.new_traces:<7d} "
                f"{report.seconds:6.1f}s"
            )
            print(line + (f"  {report.message}" if report.message else ""), flush=True)
    finally:
        engine.dispose()
        if writer is not None:
            writer.close()
    if writer is not None:
        print(
            f"{writer.samples} samples written to {args.output}; load them into Prometheus "
            f"with: promtool tsdb create-blocks-from openmetrics {args.output} <data dir>"
        )
    return 0


def _bar(name: str, total: int, hidden: bool) -> Any:
    if hidden or total == 0:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=name, unit="step", file=sys.stderr, leave=False)


def _advance(bar: Any) -> Callable[[int], None]:
    """Progress callback moving `bar` to the number of steps done."""
    return lambda done: bar.update(done - bar.n)
