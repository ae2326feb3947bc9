"""`ragpulse evaluate FILE.jsonl --metrics a,b`: the production metrics over a dataset file."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from collector.settings import Settings, load_settings

EXIT_USAGE = 2
MAX_SHOWN_INVALID = 50


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "evaluate",
        help="evaluate a JSONL dataset of traces offline",
        description="Compute metrics over a dataset of trace records (the same JSON objects "
        "the service consumes, one per line) and print a table: value, 95% CI, n, skipped, "
        "errors. Embedding metrics use the configured embedding model (offline by default); "
        "LLM-judge metrics run only when judge.models is configured (else they are skipped). "
        "When the configured database exists and is migrated, the run is recorded in `runs`. "
        "Rows may carry human `labels` (judge metric -> value on its scale, optional "
        "`labeler`): judge metrics then also report their agreement with the labels and a "
        "label-corrected mean (`judge_agreement` and `aggregate.<metric>.corrected` in --output), "
        "and each configured quality SLO on such a metric compares its good/bad classification "
        "at its threshold with the labels' (Cohen's kappa, sensitivity, specificity; "
        "`slo_agreement` in --output).",
    )
    parser.add_argument("file", metavar="FILE.jsonl", type=Path, help="dataset of trace records")
    parser.add_argument(
        "--metrics",
        required=True,
        help="comma-separated metric names, e.g. hit_rate@5,mrr,rougeL_f,cache_hit_rate "
        "(judge_consistency, judge_error_rate and judge_latency_ms_avg need the service's "
        "stored judgments: only the judge_consistency job computes them)",
    )
    parser.add_argument(
        "--output",
        metavar="FILE.json",
        type=Path,
        help="also write aggregates and per-sample values as JSON",
    )
    parser.add_argument(
        "--output-html",
        metavar="FILE.html",
        type=Path,
        help="also write a self-contained HTML page: each metric's value with its 95%% "
        "interval, the per-sample distribution and, with --group-by, the groups side by side",
    )
    parser.add_argument(
        "--group-by", metavar="TAG", help="also aggregate per value of this tag (e.g. tenant)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the bootstrap confidence intervals (default 0)"
    )
    parser.add_argument(
        "--no-record",
        action="store_true",
        help="do not record the run in the database's runs table",
    )
    parser.add_argument(
        "--skip-invalid",
        action="store_true",
        help="evaluate the valid lines and report the invalid ones (line number and reason) "
        "on stderr and under invalid_lines in --output, instead of stopping at them",
    )
    parser.add_argument(
        "--max-line-bytes",
        type=int,
        default=None,
        metavar="N",
        help="a longer line is invalid; reading it stops at the limit (default 64 MiB)",
    )
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="hide every progress bar (ours and the embedding model's loading bars)",
    )
    parser.set_defaults(func=run)


def _fail(message: str) -> int:
    print(f"ragpulse evaluate: {message}", file=sys.stderr)
    return EXIT_USAGE


def silence_progress_bars() -> None:
    """Turn off every tqdm bar of this process, ours and the libraries' (transformers'
    "Loading weights", huggingface_hub's downloads), also those created later."""
    os.environ["TQDM_DISABLE"] = "1"
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    # Libraries already imported read those variables at import time: tell them directly.
    hub = sys.modules.get("huggingface_hub.utils")
    if hub is not None:
        hub.disable_progress_bars()
    hf_logging = sys.modules.get("transformers.utils.logging")
    if hf_logging is not None:
        hf_logging.disable_progress_bar()


def run(args: argparse.Namespace) -> int:
    from evaluators.errors import UnknownMetricError
    from evaluators.registry import ResolvedMetric, resolve
    from ragpulse.metric_names import unknown_metric_message
    from ragpulse.offline_eval import MAX_LINE_BYTES, DatasetError, missing_fields, read_dataset

    if args.no_progress:
        silence_progress_bars()
    settings = load_settings(args.config)
    names = [n.strip() for n in args.metrics.split(",") if n.strip()]
    if not names:
        return _fail("--metrics names no metric")
    metrics: list[ResolvedMetric] = []
    for name in names:
        try:
            metric = resolve(name)
        except UnknownMetricError as exc:
            return _fail(unknown_metric_message(name, str(exc)))
        if metric.name not in {m.name for m in metrics}:
            metrics.append(metric)
    max_line = args.max_line_bytes if args.max_line_bytes is not None else MAX_LINE_BYTES
    if max_line < 1:
        return _fail("--max-line-bytes must be a positive number of bytes")
    try:
        dataset = read_dataset(
            args.file,
            settings.ground_truth.priority,
            settings.decode.max_depth,
            skip_invalid=args.skip_invalid,
            max_line_bytes=max_line,
        )
    except DatasetError as exc:
        return _fail(str(exc))
    for bad in dataset.invalid[:MAX_SHOWN_INVALID]:
        print(f"skipped {bad.describe(args.file)}", file=sys.stderr)
    if len(dataset.invalid) > MAX_SHOWN_INVALID:
        more = len(dataset.invalid) - MAX_SHOWN_INVALID
        print(f"skipped {more} more invalid lines (all are listed in --output)", file=sys.stderr)
    samples = dataset.samples
    problems = [
        f"metric {m.name} needs {', '.join(fields)}, which no record in {args.file} has"
        for m in metrics
        if (fields := missing_fields(m, samples))
    ]
    if problems:
        return _fail(
            "\n  ".join(["required fields are missing from the whole dataset:", *problems])
        )
    return _evaluate(
        args, settings, [m.name for m in metrics], samples, dataset.invalid, dataset.labels
    )


def _slo_trust(settings: Settings, result: Any, labels: list[Any], seed: int) -> list[Any]:
    """The configured SLOs' classification against the dataset's labels (`slo.*`)."""
    from ragpulse.offline_eval.slo_labels import compare_slos_with_labels

    return compare_slos_with_labels(result, labels, settings.slo.specs(), seed)


def _evaluate(
    args: argparse.Namespace,
    settings: Settings,
    names: list[str],
    samples: list[Any],
    invalid: list[Any],
    labels: list[Any],
) -> int:
    from evaluators.registry import EvalContext
    from evaluators.runner import evaluate, resolve_all
    from ragpulse.judge import make_judge, require_reachable, unreachable
    from ragpulse.offline_eval import (
        RunRecorder,
        add_label_results,
        combined_signature,
        compare_judges_with_labels,
        render_agreement_table,
        render_table,
        skip_notes,
        to_json,
        usable_database,
    )

    metrics = resolve_all(names)
    url = settings.database.url.get_secret_value()
    session_factory = None
    if usable_database(url):
        from collector.store.session import make_engine, make_session_factory

        session_factory = make_session_factory(make_engine(url))
    ctx = EvalContext(
        embedder=_embedder(settings) if any(m.spec.uses_embedder for m in metrics) else None,
        judge=make_judge(settings.judge, session_factory)
        if any(m.spec.uses_judge for m in metrics)
        else None,
        options={**settings.ux.model_dump(), "consistency_delta": settings.judge.consistency_delta},
        seed=args.seed,
    )
    if ctx.judge is not None:
        require_reachable(settings.judge)
    recorder = None
    if session_factory is not None and not args.no_record:
        recorder = RunRecorder(
            session_factory,
            str(args.file.resolve()),
            names,
            {
                "seed": args.seed,
                "group_by": args.group_by,
                "samples": len(samples),
                "invalid_lines": len(invalid),
            },
        )
    try:
        with _ProgressBar(len(samples) * len(names), disable=args.no_progress) as bar:
            result = evaluate(samples, names, ctx, progress=bar, group_by=args.group_by)
    except BaseException:
        if recorder is not None:
            recorder.finish("failed", None, None)
        raise
    document = to_json(result, samples, invalid)
    labelled = compare_judges_with_labels(result, labels, args.seed)
    add_label_results(document, labelled)
    slos = _slo_trust(settings, result, labels, args.seed) if labelled else []
    if slos:
        from ragpulse.offline_eval.slo_labels import slo_trust_dict

        document["slo_agreement"] = slo_trust_dict(slos)
    print(render_table(result.aggregates))
    if labelled:
        print("\njudge agreement with human labels (all = the mean over judge models)")
        print(render_agreement_table(labelled))
    if slos:
        from ragpulse.offline_eval.slo_labels import HEADING, render_slo_trust

        print(f"\n{HEADING}")
        print(render_slo_trust(slos))
    for value, aggs in result.groups.items():
        print(f"\n{args.group_by} = {value}")
        print(render_table(aggs))
    for note in skip_notes(result.aggregates):
        print(f"  {note}", file=sys.stderr)
    if ctx.judge is not None:
        print(_judge_summary(ctx.judge), file=sys.stderr)
        from collector.errors import UserError

        if (problem := unreachable(ctx.judge)) is not None:
            if recorder is not None:
                recorder.finish("failed", None, None)
            raise UserError(problem)
    if args.output is not None:
        args.output.write_text(
            json.dumps(document, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
        )
    if args.output_html is not None:
        from exporters.report.offline import write_evaluation_report

        write_evaluation_report(args.output_html, document, dataset=str(args.file))
    if recorder is not None:
        recorder.finish(
            "succeeded", document["aggregate"], combined_signature(result.aggregates.values())
        )
        print(f"recorded as run {recorder.run_id}", file=sys.stderr)
    return 0


def _embedder(settings: Settings) -> Any:
    from evaluators.embedder import Embedder

    cfg = settings.embeddings
    return Embedder(
        cfg.model, batch_size=cfg.batch_size, device=cfg.device, precision=cfg.precision
    )


def _judge_summary(judge: Any) -> str:
    """One line of judge usage: what was paid, what the cache saved, what failed."""
    st = judge.stats
    line = (
        f"judge: {st.calls} calls, {st.cache_hits} cache hits, {st.errors} errors, "
        f"{st.retries} retries, {st.tokens} tokens, {st.cost_usd:.4f} USD"
    )
    if st.unpriced_models:
        line += f" (no litellm price for {', '.join(sorted(st.unpriced_models))}: counted as 0)"
    return line


class _ProgressBar:
    """tqdm on stderr fed by the runner's progress events (with judge counters)."""

    def __init__(self, total: int, disable: bool):
        from tqdm import tqdm

        self._bar = tqdm(
            total=total,
            disable=disable,
            file=sys.stderr,
            unit="sample",
            desc="evaluating",
            dynamic_ncols=True,
        )
        self._done: dict[str, int] = {}

    def __enter__(self) -> _ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.close()

    def __call__(self, event: Any) -> None:
        delta = event.done - self._done.get(event.metric, 0)
        self._done[event.metric] = event.done
        self._bar.set_description(event.metric, refresh=False)
        if event.counters:
            shown = {
                k: event.counters[k]
                for k in ("calls", "cache_hits", "errors")
                if k in event.counters
            }
            if "cost_usd" in event.counters:
                shown["cost_usd"] = round(event.counters["cost_usd"], 4)
            self._bar.set_postfix(shown, refresh=False)
        if delta:
            self._bar.update(delta)
