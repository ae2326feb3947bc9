"""`ragpulse compare`: is B worse than A? Two evaluate runs, or two versions in the store."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from collector.settings import load_settings

EXIT_WORSE = 1

EPILOG = """examples:
  # two systems' answers to one set of questions: paired question by question
  ragpulse evaluate answers-a.jsonl --metrics hit_rate@1,mrr,faithfulness --output a.json
  ragpulse evaluate answers-b.jsonl --metrics hit_rate@1,mrr,faithfulness --output b.json
  ragpulse compare a.json b.json --fail-on hit_rate@1,faithfulness

  # two versions of the live system over the last day (versions.sources)
  ragpulse compare --metric hit_rate@1,mrr,faithfulness --a v6 --b v7 --since 24h

exit codes: 0 compared (and not significantly worse on a --fail-on metric), 1 B is
significantly worse on a --fail-on metric, 2 usage or data error."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="compare two versions with statistics (A/B, canary, offline runs)",
        description="Compare version B against version A on several metrics: B - A with a "
        "bootstrap 95% interval, an effect size, the p-value and its correction across the "
        "metrics (Holm by default, or Benjamini-Hochberg), and the smallest difference the "
        "samples can detect. Where both sides answered the same questions (two runs on one "
        "dataset, shadow or replay traffic) the test is paired: a sign-flip permutation "
        "test and a paired bootstrap on per-question differences, with win/tie/loss counts; "
        "otherwise the two sides are independent samples (Welch's t test, or the "
        "two-proportion z test for 0/1 metrics such as hit rates, and a two-sample bootstrap).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "runs",
        nargs="*",
        metavar="RUN.json",
        type=Path,
        help="two `ragpulse evaluate --output` documents, A then B (omit to compare "
        "versions in the store with --a/--b)",
    )
    parser.add_argument(
        "--metric",
        "--metrics",
        dest="metric",
        metavar="A,B",
        help="metrics to compare (files: default every metric both runs have)",
    )
    parser.add_argument("--a", metavar="VERSION", help="store: the baseline version")
    parser.add_argument("--b", metavar="VERSION", help="store: the candidate version")
    parser.add_argument(
        "--since", default="24h", metavar="DURATION", help="store: window (default 24h)"
    )
    parser.add_argument(
        "--until", metavar="ISO-TIME", help="store: end of the window (default now)"
    )
    parser.add_argument(
        "--pairing",
        choices=["auto", "paired", "unpaired"],
        default="auto",
        help="auto (default): paired when at least half the smaller side shares its "
        "questions with the other, else unpaired",
    )
    parser.add_argument(
        "--correction",
        choices=["holm", "bh"],
        default="holm",
        help="multiple-comparison correction across the metrics: holm (family-wise, "
        "default) or bh (Benjamini-Hochberg false discovery rate)",
    )
    parser.add_argument(
        "--alpha", type=float, default=0.05, help="significance level (default 0.05)"
    )
    parser.add_argument(
        "--resamples",
        type=int,
        default=10_000,
        help="permutation and bootstrap resamples (default 10000)",
    )
    parser.add_argument(
        "--power", type=float, default=0.8, help="power of the detectable difference (default 0.8)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the resampling (default 0)")
    parser.add_argument(
        "--fail-on",
        metavar="A,B",
        help="exit 1 when B is significantly worse on one of these metrics ('all': any "
        "compared metric) — a release gate for CI",
    )
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.add_argument(
        "--output-html", metavar="FILE.html", type=Path, help="also write an HTML page"
    )
    parser.set_defaults(func=run)


def _names(text: str | None) -> list[str]:
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def run(args: argparse.Namespace) -> int:
    from collector.errors import UserError
    from ragpulse.compare_render import direction, document, gate, render_table

    if len(args.runs) not in (0, 2):
        raise UserError("give two run files (A then B), or none and --a/--b for the store")
    if args.runs and (args.a or args.b):
        raise UserError("--a/--b compare versions in the store; with run files leave them out")
    if not 0 < args.alpha < 1 or not 0 < args.power < 1:
        raise UserError("--alpha and --power must lie between 0 and 1")
    if args.resamples < 100:
        raise UserError("--resamples must be at least 100")
    wanted = _names(args.metric)
    if args.runs:
        rows_a, rows_b, metrics, sides = _from_files(args, wanted)
    else:
        rows_a, rows_b, metrics, sides = _from_store(args, wanted)
    fail_on = _names(args.fail_on)
    unknown = [m for m in fail_on if m != "all" and m not in metrics]
    if unknown:
        raise UserError(f"--fail-on names {', '.join(unknown)}, not among the compared metrics")
    directionless = [m for m in fail_on if m != "all" and direction(m) == "none"]
    if directionless:
        raise UserError(f"--fail-on: {', '.join(directionless)} has no better direction")

    from evaluators.comparison.rows import compare_rows

    try:
        found = compare_rows(
            rows_a,
            rows_b,
            metrics,
            pairing=args.pairing,
            resamples=args.resamples,
            alpha=args.alpha,
            correction=args.correction,
            power=args.power,
            seed=args.seed,
        )
    except ValueError as exc:
        raise UserError(str(exc)) from None
    failed = gate(found, fail_on)
    if args.json:
        print(json.dumps(document(found, sides, failed), ensure_ascii=False, indent=2))
    else:
        print(render_table(found, sides))
    if args.output_html is not None:
        from exporters.report.comparison import write_comparison_report

        write_comparison_report(args.output_html, document(found, sides, failed))
        print(f"wrote {args.output_html}", file=sys.stderr)
    if failed:
        print(
            f"ragpulse compare: B is significantly worse on {', '.join(failed)} (--fail-on)",
            file=sys.stderr,
        )
        return EXIT_WORSE
    return 0


def _from_files(args: argparse.Namespace, wanted: list[str]) -> tuple[Any, Any, list[str], Any]:
    from ragpulse.compare_render import Sides
    from ragpulse.compare_runs import keyed_rows, load_run, shared_metrics

    a, b = (load_run(path) for path in args.runs)
    metrics = shared_metrics(a, b, wanted)
    rows_a, rows_b, key = keyed_rows(a, b)
    sides = Sides(f"{a.path} ({len(a.samples)} samples)", f"{b.path} ({len(b.samples)} samples)")
    if key == "trace id":
        sides = Sides(sides.a + ", keyed by trace id", sides.b + ", keyed by trace id")
    return rows_a, rows_b, metrics, sides


def _from_store(args: argparse.Namespace, wanted: list[str]) -> tuple[Any, Any, list[str], Any]:
    from sqlalchemy.orm import Session

    from collector.errors import UserError
    from collector.store.history import have_text, stored_history
    from collector.store.session import make_engine
    from collector.store.version_scores import version_scores
    from ragpulse.compare_render import Sides
    from ragpulse.metric_jobs import metric_target
    from ragpulse.store_check import require_migrated
    from ragpulse.time_window import window

    if not args.a or not args.b:
        raise UserError("give --a VERSION and --b VERSION (or two run files)")
    if args.a == args.b:
        raise UserError("--a and --b name the same version")
    if not wanted:
        raise UserError("--metric is required with --a/--b (e.g. --metric hit_rate@1,mrr)")
    settings = load_settings(args.config)
    targets = [metric_target(settings, m, from_traces=True) for m in wanted]
    jobs = sorted({j for t in targets for j in t.jobs})
    metrics = [t.metric for t in targets]
    since, until = window(args.since, args.until)
    url = settings.database.url.get_secret_value()
    require_migrated(url)
    engine = make_engine(url)
    try:
        with Session(engine) as session:
            history = stored_history(session, jobs=jobs, until=until)
            rows = [
                [
                    (t.pair_key, t.scores)
                    for t in version_scores(
                        session, jobs=jobs, metrics=metrics, version=v, since=since, until=until
                    )
                ]
                for v in (args.a, args.b)
            ]
    finally:
        engine.dispose()
    empty = [v for v, r in zip((args.a, args.b), rows, strict=True) if not r]
    if empty:
        raise UserError(
            f"no scored traces of version {', '.join(empty)} between "
            f"{since:%Y-%m-%d %H:%M} and {until:%Y-%m-%d %H:%M} UTC (versions come from "
            "versions.sources; `ragpulse traces --version V` lists a version's traces)"
        )
    start = since
    told = None
    if history.inside(since, until) < until - since and history.first is not None:
        # a young store: the window holds all of its history, not the span asked
        start = history.first
        told = f"{have_text(history, until)}: the {args.since} window holds only that"
    span = f"{start:%Y-%m-%d %H:%M} – {until:%Y-%m-%d %H:%M} UTC"
    return (
        rows[0],
        rows[1],
        metrics,
        Sides(
            f"version {args.a}, {len(rows[0])} traces, {span}",
            f"version {args.b}, {len(rows[1])} traces, {span}",
            told,
        ),
    )
