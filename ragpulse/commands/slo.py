"""`ragpulse slo`: check the quality SLOs, generate their Prometheus rules, promtool tests
and Grafana dashboard (the same generators `dashboards/build.py` runs on the example), and
say how far to trust each budget (`trust`: the SLI's classification against the stored
human labels, `collector.slo.trust`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "slo",
        help="check quality SLOs, generate their rules, tests and dashboard",
        description="The SLOs come from the settings (slo.openslo_file, slo.objectives) or "
        "from --openslo FILE. `check` validates them and prints each one; `rules` writes "
        "DIR/rules/slo-NAME.yml (recording rules and burn-rate alerts), "
        "DIR/tests/slo-NAME_{page,ticket}_test.yml (run them with `promtool test rules` in "
        "DIR/tests) and DIR/slo.json (the Grafana dashboard); `trust` compares each SLO's "
        "good/bad classification of the stored judge scores with the stored human labels of "
        "the same traces over --since (default: the SLO's window): Cohen's kappa, sensitivity "
        "(of the traces humans call bad, the share the SLI counts bad) and specificity, with "
        "bootstrap 95%% intervals, and both bad shares.",
        epilog="examples:\n  ragpulse slo check --openslo examples/slo.yaml\n"
        "  ragpulse slo rules --openslo examples/slo.yaml --output deploy/slo\n"
        "  ragpulse slo trust --since 7d",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("action", choices=("check", "rules", "trust"))
    parser.add_argument("--openslo", metavar="FILE", help="an OpenSLO v1 file (else: settings)")
    parser.add_argument("--output", metavar="DIR", default=".", help="where `rules` writes")
    parser.add_argument(
        "--since",
        metavar="DURATION",
        help="`trust`: the look-back of the labelled traces, e.g. 7d (default: each SLO's window)",
    )
    parser.add_argument(
        "--json", action="store_true", help="`trust`: print JSON instead of the table"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from collector.settings import SloSpecError, load_settings
    from collector.settings.openslo import load_openslo

    try:
        if args.openslo:
            specs = load_openslo(Path(args.openslo))
        else:
            specs = load_settings(args.config).slo.specs()
    except SloSpecError as exc:
        print(f"ragpulse slo: {exc}")
        return 2
    if not specs:
        print("ragpulse slo: no SLO declared (slo.openslo_file, slo.objectives or --openslo)")
        return 2
    if args.action == "trust":
        return _trust(args, specs)
    if args.action == "check":
        for spec in specs:
            good = _good(spec)
            alerts = ", ".join(
                f"{a.severity} {a.factor:g}x/{a.long_window}+{a.short_window}" for a in spec.alerts
            )
            print(f"{spec.name}: good = {good}; {spec.target:.4g} over {spec.window}; {alerts}")
        return 0
    _write(specs, Path(args.output))
    return 0


def _trust(args: argparse.Namespace, specs: Any) -> int:
    from datetime import UTC, datetime, timedelta

    from collector.jobs.scheduler import metric_jobs
    from collector.settings import load_settings, parse_duration
    from collector.slo.trust import slo_trust
    from collector.store.session import make_engine, make_session_factory
    from ragpulse.offline_eval.slo_labels import HEADING, render_slo_trust, slo_trust_dict
    from ragpulse.store_check import require_migrated

    if args.since is not None:
        try:
            parse_duration(args.since)
        except ValueError as exc:
            print(f"ragpulse slo: --since: {exc}")
            return 2
    settings = load_settings(args.config)
    url = settings.database.url.get_secret_value()
    require_migrated(url)  # a one-line UserError: no store, or not migrated
    engine = make_engine(url)
    factory = make_session_factory(engine)
    now = datetime.now(UTC)
    jobs = metric_jobs(settings)
    with factory() as session:
        trusts = [
            slo_trust(
                session,
                spec,
                jobs,
                now - timedelta(seconds=parse_duration(args.since or spec.window)),
            )
            for spec in specs
        ]
    engine.dispose()
    if args.json:
        print(json.dumps(slo_trust_dict(trusts), indent=2))
    else:
        print(HEADING)
        print(render_slo_trust(trusts))
    return 0


def _good(spec: Any) -> str:
    """What makes an event good, in words."""
    if spec.kind == "success":
        return f"{spec.metric} evaluated"
    if spec.kind == "latency":
        return f"latency_ms <= {spec.threshold:g} (every trace)"
    if spec.kind == "agreement":
        return "the production judge's decision agrees with judge_label (labelled traces)"
    return f"{spec.metric} {spec.op} {spec.threshold:g}"


def _write(specs: Any, out: Path) -> None:
    from grafana_foundation_sdk.cog.encoder import JSONEncoder

    from dashboards import boards, slo_rule_tests, slo_rules

    (out / "rules").mkdir(parents=True, exist_ok=True)
    (out / "tests").mkdir(parents=True, exist_ok=True)
    written = []
    for spec in specs:
        path = out / "rules" / slo_rules.file_name(spec)
        path.write_text(slo_rules.render([spec]), encoding="utf-8")
        written.append(path)
        for severity in ("page", "ticket"):
            if any(a.severity == severity for a in spec.alerts):
                test = out / "tests" / slo_rule_tests.file_name(spec, severity)
                test.write_text(slo_rule_tests.render([spec], severity), encoding="utf-8")
                written.append(test)
    board = out / "slo.json"
    text = json.dumps(
        boards.slo_board(specs).build(), cls=JSONEncoder, indent=2, ensure_ascii=False
    )
    board.write_text(text + "\n", encoding="utf-8")
    written.append(board)
    for path in written:
        print(path)
