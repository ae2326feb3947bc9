"""Generate the Grafana dashboards (JSON) and the quality alert rules from the registry.

Run `python dashboards/build.py` after changing a metric, a job's metrics, a band or a
panel; the generated files are what ships (tests/dashboards/test_generated.py checks they
are up to date). The dashboards are built with grafana-foundation-sdk's builders
(`dashboards/boards.py` assembles the sections of `dashboards/panels/`); the overview has
one row per scheduled job and a panel for every metric the job produces
(`metrics_view.scheduled`): a metric added to a job gets its panel here, and, once it
declares a direction in the registry, colours and drift rules. Colours follow the seeds'
bands (`metrics_view.BANDS`: seed 004 §11.2, seed 000).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(HERE.parent))

from grafana_foundation_sdk.cog.encoder import JSONEncoder  # noqa: E402

from collector.settings.openslo import load_openslo  # noqa: E402
from dashboards import (  # noqa: E402
    boards,
    drift_rule_tests,
    metrics_view,
    quality_rules,
    slo_rule_tests,
    slo_rules,
)

OUT = HERE / "grafana" / "dashboards"
RULES = HERE / "prometheus" / "rules" / "quality.yml"
DRIFT_TESTS = HERE / "prometheus" / "tests" / "drift_test.yml"
SLO_RULES = HERE / "prometheus" / "rules"
SLO_TESTS = HERE / "prometheus" / "tests"
"""One rules file per SLO (`slo-NAME.yml`) and its page and ticket tests: promtool then
evaluates only that SLO's rules for each test."""


def generated() -> dict[Path, str]:
    """Every generated file and its content."""
    files = {
        OUT / name: json.dumps(board().build(), cls=JSONEncoder, indent=2, ensure_ascii=False)
        + "\n"
        for name, board in boards.BOARDS.items()
    }
    files[RULES] = quality_rules.render()
    files[DRIFT_TESTS] = drift_rule_tests.render()
    for spec in load_openslo(boards.SLO_EXAMPLE):
        files[SLO_RULES / slo_rules.file_name(spec)] = slo_rules.render([spec])
        for severity in sorted({a.severity for a in spec.alerts}):
            name = slo_rule_tests.file_name(spec, severity)
            files[SLO_TESTS / name] = slo_rule_tests.render([spec], severity)
    return files


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    missing = metrics_view.undirected()
    if missing:
        print(
            f"warning: no direction declared for {', '.join(missing)}: no colours and no "
            "drift rules for them (declare direction= in their MetricSpec)",
            file=sys.stderr,
        )
    for path, text in generated().items():
        path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
