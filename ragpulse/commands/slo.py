"""`ragpulse slo`: check the quality SLOs and generate their Prometheus rules, promtool tests
and Grafana dashboard (the same generators `dashboards/build.py` runs on the example)."""

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
        "DIR/tests) and DIR/slo.json (the Grafana dashboard).",
        epilog="examples:\n  ragpulse slo check --openslo examples/slo.yaml\n"
        "  ragpulse slo rules --openslo examples/slo.yaml --output deploy/slo",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("action", choices=("check", "rules"))
    parser.add_argument("--openslo", metavar="FILE", help="an OpenSLO v1 file (else: settings)")
    parser.add_argument("--output", metavar="DIR", default=".", help="where `rules` writes")
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
    if args.action == "check":
        for spec in specs:
            good = (
                f"{spec.metric} {spec.op} {spec.threshold:g}"
                if spec.kind == "threshold"
                else f"{spec.metric} evaluated"
            )
            alerts = ", ".join(
                f"{a.severity} {a.factor:g}x/{a.long_window}+{a.short_window}" for a in spec.alerts
            )
            print(f"{spec.name}: good = {good}; {spec.target:.4g} over {spec.window}; {alerts}")
        return 0
    _write(specs, Path(args.output))
    return 0


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
