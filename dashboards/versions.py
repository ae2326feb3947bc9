"""The overview's versions row: the guarded quality metrics per version, with intervals.

Results are grouped by `version` like by `tenant` (`collector/jobs/versions.py`): one
label at a time, so a version's series has `tenant=""` and the overall and tenant series
have `version=""`. The row draws, for each metric an alert guards (the paged ones and the
threshold alerts', `guarded`), the 1h value of every version chosen in the `version`
variable with its 95% interval, and a table of each version's latest 24h value, interval
and n. No alert reads version series: comparing versions is a canary's job, and a
version's series starts and ends with its rollout.
"""

from __future__ import annotations

from typing import Any

from collector.settings import PAGE_METRICS
from dashboards import metrics_view, quality_rules
from dashboards.metrics_view import BANDS, describe
from evaluators.registry import JOB_METRICS

VARIABLE = "version"
SELECTOR = f'{VARIABLE}=~"${VARIABLE}"'
"""Every version chosen (All: `.+`, every series that has a version)."""
CI = r".* CI (lower|upper)$"
"""The interval bounds' display names (`<version> CI lower`), matched by regex."""
TABLE_WINDOW = "24h"
LINE_WINDOW = "1h"


def guarded() -> tuple[str, ...]:
    """Metrics an alert guards, in the overview's row order, that the jobs compute per
    group (the judge's own quality metrics, `JOB_METRICS`, exist only overall)."""
    alerted = set(PAGE_METRICS) | {a.metric for a in quality_rules.THRESHOLD_ALERTS}
    return tuple(
        m
        for _, _, metrics in metrics_view.scheduled()
        for m in metrics
        if m in alerted and m not in JOB_METRICS
    )


def variable(datasource: dict[str, str]) -> dict[str, Any]:
    query = f'label_values(ragpulse_metric_value{{{VARIABLE}!=""}}, {VARIABLE})'
    return {
        "name": VARIABLE,
        "type": "query",
        "label": "Version",
        "datasource": datasource,
        "query": {"query": query, "refId": VARIABLE},
        "definition": query,
        "includeAll": True,
        "allValue": ".+",
        "multi": True,
        "refresh": 2,
        "current": {"text": ["All"], "value": ["$__all"]},
        "description": "Versions drawn on the versions row (All: every version with "
        "series). The other rows show the overall or a tenant's value.",
    }


def _target(ref: str, family: str, metrics: str, window: str, legend: str) -> dict[str, Any]:
    return {
        "refId": ref,
        "expr": f'{family}{{{metrics},window="{window}",{SELECTOR}}}',
        "legendFormat": legend,
    }


def over_time(metric: str, unit: dict[str, Any], datasource: dict[str, str]) -> dict[str, Any]:
    """The metric's 1h value per version, each with its 95% interval as dashed bounds."""
    selector = f'metric="{metric}"'
    targets = [_target("A", "ragpulse_metric_value", selector, LINE_WINDOW, "{{version}}")]
    interval = describe(metric).interval
    if interval:
        targets += [
            _target("B", "ragpulse_metric_ci_lower", selector, LINE_WINDOW, "{{version}} CI lower"),
            _target("C", "ragpulse_metric_ci_upper", selector, LINE_WINDOW, "{{version}} CI upper"),
        ]
    for t in targets:
        t["datasource"] = datasource
    hidden = {"legend": True, "tooltip": False, "viz": False}
    bounds = " between its 95% interval (dashed)" if interval else ""
    return {
        "type": "timeseries",
        "title": f"{metric} per version (1h{', 95% CI' if interval else ''})",
        "description": f"{metric} over the last hour for each chosen version{bounds}. "
        f"Overlapping intervals: the versions are not told apart yet. "
        f"{metrics_view.panel_text(metric)}",
        "targets": targets,
        "fieldConfig": {
            "defaults": {
                "thresholds": metrics_view.thresholds(metric),
                "custom": {
                    "thresholdsStyle": {"mode": "dashed" if metric in BANDS else "off"},
                    "lineWidth": 2,
                },
                **unit,
            },
            "overrides": [
                {
                    "matcher": {"id": "byRegexp", "options": CI},
                    "properties": [
                        {"id": "custom.lineWidth", "value": 1},
                        {"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [4, 4]}},
                        {"id": "custom.hideFrom", "value": hidden},
                    ],
                }
            ],
        },
        "options": {
            "legend": {"displayMode": "list", "placement": "bottom"},
            "tooltip": {"mode": "multi"},
        },
    }


def latest_table(datasource: dict[str, str]) -> dict[str, Any]:
    """Each guarded metric's latest 24h value per version, with its interval and n."""
    selector = f'metric=~"{"|".join(guarded())}"'
    columns = (
        ("A", "ragpulse_metric_value", "value"),
        ("B", "ragpulse_metric_ci_lower", "CI lower"),
        ("C", "ragpulse_metric_ci_upper", "CI upper"),
        ("D", "ragpulse_metric_samples", "n"),
    )
    targets = []
    for ref, family, name in columns:
        target = _target(
            ref, family, selector, TABLE_WINDOW, f"{{{{metric}}}} {{{{version}}}} {name}"
        )
        targets.append({**target, "datasource": datasource, "format": "table", "instant": True})
    hide = ("Time", "__name__", "window", "tenant", "job", "instance")
    return {
        "type": "table",
        "title": f"Versions: latest {TABLE_WINDOW} value, 95% CI and n",
        "description": f"Per guarded metric and version, the value over the last "
        f"{TABLE_WINDOW} with its 95% interval and the samples behind it. Versions past "
        "versions.max_values share the row `other`.",
        "targets": targets,
        "transformations": [
            {"id": "merge", "options": {}},
            {
                "id": "organize",
                "options": {
                    "excludeByName": dict.fromkeys(hide, True),
                    "renameByName": {f"Value #{ref}": name for ref, _, name in columns},
                    "indexByName": {
                        "metric": 0,
                        "version": 1,
                        **{f"Value #{ref}": 2 + i for i, (ref, _, _) in enumerate(columns)},
                    },
                },
            },
            {"id": "sortBy", "options": {"sort": [{"field": "metric"}]}},
        ],
        "fieldConfig": {
            "defaults": {"decimals": 3, "unit": "none"},
            "overrides": [
                {
                    "matcher": {"id": "byName", "options": "n"},
                    "properties": [{"id": "decimals", "value": 0}],
                }
            ],
        },
        "options": {"showHeader": True, "cellHeight": "sm"},
    }
