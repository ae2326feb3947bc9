"""`ragpulse jobs run [NAME...]` and `ragpulse jobs list`: the scheduled jobs, once, now."""

from __future__ import annotations

import argparse
import json
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
        "are evaluated), write metric_results and print one line per job.",
    )
    run_parser.add_argument("names", nargs="*", metavar="NAME", help="jobs to run (default: all)")
    run_parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    run_parser.set_defaults(func=run)
    list_parser = sub.add_parser("list", help="list the jobs and their metrics")
    list_parser.set_defaults(func=list_jobs)


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
    from collector.store.session import make_engine
    from ragpulse.job_setup import job_environment
    from ragpulse.judge import require_reachable, unreachable
    from ragpulse.store_check import require_migrated

    settings = load_settings(args.config)
    url = settings.database.url.get_secret_value()
    require_migrated(url)  # before connecting: SQLite would create an empty file
    engine = make_engine(url)
    try:
        env = job_environment(settings, engine)
        try:
            runner = build_runner(settings, engine, env, names=args.names or None)
        except ValueError as exc:
            print(f"ragpulse jobs: {exc}")
            return 2
        if env.judge is not None and set(runner.jobs) & set(JUDGE_JOBS):
            require_reachable(settings.judge)
        reports = runner.run_many()
    finally:
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
