"""The alert rules reference: every alerting rule of every shipped rule file
(`dashboards/prometheus/rules/*.yml`), grouped by alert name, with its expression,
duration, labels and annotations, and the link to its runbook."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from collector.settings.severity import CRITICAL, MEANING, WARNING
from ragpulse.docs.markdown import BANNER, code, table

RULES = Path(__file__).resolve().parents[2] / "dashboards" / "prometheus" / "rules"

INTRO = f"""# Alert rules

Every alert ragpulse ships, read from the Prometheus rule files in
`dashboards/prometheus/rules/` (`quality.yml` is generated from the metric registry by
`python dashboards/build.py`; `operations.yml` is written by hand). An alert name can
have several rules (one per tier of metrics, say): they share a runbook. Every rule's
`runbook_url` annotation links to its runbook page here; see
[Runbooks](../runbooks/index.md) for the site address written into them.

Every rule's `severity` is one of two (`collector/settings/severity.py`): **{CRITICAL}**
({MEANING[CRITICAL]}) goes to the `pager` receiver of
`deploy/alertmanager/alertmanager.yml`, **{WARNING}** ({MEANING[WARNING]}) to
`tickets`. An SLO declares its alerts as `page` or `ticket` (the SRE Workbook's words):
its rules say `{CRITICAL}` and `{WARNING}`.

"""


@dataclass(frozen=True)
class Rule:
    """One alerting rule as shipped, and the file and group it is in."""

    alert: str
    file: str
    group: str
    expr: str
    duration: str
    labels: dict[str, str]
    annotations: dict[str, str]


def rules(folder: Path = RULES) -> list[Rule]:
    """Every alerting rule of every rule file, in file order."""
    out = []
    for path in sorted(folder.glob("*.yml")):
        document: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
        for group in document["groups"]:
            for rule in group["rules"]:
                if "alert" not in rule:
                    continue
                out.append(
                    Rule(
                        alert=rule["alert"],
                        file=path.name,
                        group=group["name"],
                        expr=rule["expr"].strip(),
                        duration=str(rule.get("for", "0s")),
                        labels={k: str(v) for k, v in rule.get("labels", {}).items()},
                        annotations={k: str(v) for k, v in rule.get("annotations", {}).items()},
                    )
                )
    return out


def by_alert(all_rules: list[Rule]) -> dict[str, list[Rule]]:
    out: dict[str, list[Rule]] = {}
    for rule in all_rules:
        out.setdefault(rule.alert, []).append(rule)
    return out


def render() -> str:
    grouped = by_alert(rules())
    header = ("alert", "severity", "file", "rules", "summary")
    rows = [
        [
            f"[{code(alert)}](#{alert.lower()})",
            ", ".join(sorted({r.labels.get("severity", "") for r in rs})),
            code(rs[0].file),
            str(len(rs)),
            rs[0].annotations.get("summary", ""),
        ]
        for alert, rs in grouped.items()
    ]
    parts = [BANNER, INTRO, table(header, rows), "\n"]
    for alert, rs in grouped.items():
        parts.append(f"## {alert}\n\n")
        parts.append(f"Runbook: [{alert}](../runbooks/{alert}.md)\n\n")
        for rule in rs:
            labels = ", ".join(f"{k}={v}" for k, v in rule.labels.items())
            parts.append(
                f"- File {code(rule.file)}, group {code(rule.group)}, for {code(rule.duration)}, "
                f"labels {code(labels)}\n\n"
            )
            parts.append(f"    ```promql\n{_indent(rule.expr)}\n    ```\n\n")
        parts.append(f"Summary: {code(rs[0].annotations.get('summary', ''))}\n\n")
    return "".join(parts).rstrip("\n") + "\n"


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.split("\n"))
