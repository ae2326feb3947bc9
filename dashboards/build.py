"""Generate the Grafana dashboards (JSON) and the quality alert rules from the registry.

Run `python dashboards/build.py` after changing a metric, a job's metrics, a band or a
panel; the generated files are what ships (tests/dashboards/test_generated.py checks they
are up to date), and so are their Kubernetes forms (`dashboards/kubernetes.py`,
tests/deploy/test_kubernetes.py). The dashboards are built with grafana-foundation-sdk's
builders (`dashboards/boards.py` assembles the sections of `dashboards/panels/`); the overview has
one row per scheduled job and a panel for every metric the job produces
(`metrics_view.scheduled`): a metric added to a job gets its panel here, and, once it
declares a direction in the registry, colours and drift rules. Colours follow the seeds'
bands (`metrics_view.BANDS`: seed 004 §11.2, seed 000).

Every alert's `runbook_url` points at its page under the documentation site
(`dashboards/runbooks.py`): `RAGPULSE_DOCS_URL=https://docs.example.org/ragpulse/ python
dashboards/build.py` writes another site address into the generated rules and into the
hand-written ones (`operations.yml`) and their promtool tests.
"""

from __future__ import annotations

import json
import os
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
    kubernetes,
    metrics_view,
    quality_rules,
    runbooks,
    slo_rule_tests,
    slo_rules,
    threshold_rule_tests,
)

OUT = HERE / "grafana" / "dashboards"
RULES = HERE / "prometheus" / "rules" / "quality.yml"
DRIFT_TESTS = HERE / "prometheus" / "tests" / "drift_test.yml"
THRESHOLD_TESTS = HERE / "prometheus" / "tests" / "threshold_test.yml"
HAND_WRITTEN = (
    HERE / "prometheus" / "rules" / "operations.yml",
    HERE / "prometheus" / "rules" / "topics.yml",
    HERE / "prometheus" / "tests" / "operations_test.yml",
    HERE / "prometheus" / "tests" / "topics_test.yml",
    HERE / "prometheus" / "tests" / "quality_test.yml",
)
"""Rule files and promtool tests written by hand: only their `runbook_url` lines are
rewritten (to the site address given)."""
SLO_RULES = HERE / "prometheus" / "rules"
SLO_TESTS = HERE / "prometheus" / "tests"
"""One rules file per SLO (`slo-NAME.yml`) and its page and ticket tests: promtool then
evaluates only that SLO's rules for each test."""


def generated(docs_url: str = runbooks.DOCS_URL) -> dict[Path, str]:
    """Every generated file and its content, runbook links under `docs_url`."""
    files = {
        OUT / name: json.dumps(board().build(), cls=JSONEncoder, indent=2, ensure_ascii=False)
        + "\n"
        for name, board in boards.BOARDS.items()
    }
    files[RULES] = quality_rules.render(docs_url)
    files[DRIFT_TESTS] = drift_rule_tests.render(docs_url)
    files[THRESHOLD_TESTS] = threshold_rule_tests.render(docs_url)
    for path in HAND_WRITTEN:
        files[path] = runbooks.relink(path.read_text(encoding="utf-8"), docs_url)
    for spec in load_openslo(boards.SLO_EXAMPLE):
        files[SLO_RULES / slo_rules.file_name(spec)] = slo_rules.render([spec], docs_url=docs_url)
        for severity in sorted({a.severity for a in spec.alerts}):
            name = slo_rule_tests.file_name(spec, severity)
            files[SLO_TESTS / name] = slo_rule_tests.render([spec], severity, docs_url)
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
    docs_url = os.environ.get("RAGPULSE_DOCS_URL", runbooks.DOCS_URL)
    for path, text in generated(docs_url).items():
        path.write_text(text, encoding="utf-8")
    # the same rules and dashboards as Kubernetes objects (deploy/kubernetes/), made from
    # the files just written and the hand-written rules beside them
    kubernetes.write()


if __name__ == "__main__":
    main()
