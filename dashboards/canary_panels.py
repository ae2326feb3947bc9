"""The versions row's canary panels: the candidate against the baseline per guarded
metric (`collector/jobs/canary.py`, `ragpulse_canary_*`).

A table of the latest comparison (difference, 95% interval, the smallest difference the
traffic detects, corrected p, the verdict, samples per side) and the difference over time
between its interval and the ± detectable band: a difference inside the band with an
interval across zero is "cannot tell yet", not "equal".
"""

from __future__ import annotations

from typing import Any

COLUMNS = (
    ("A", "ragpulse_canary_diff", "B − A"),
    ("B", "ragpulse_canary_diff_ci_lower", "CI lower"),
    ("C", "ragpulse_canary_diff_ci_upper", "CI upper"),
    ("D", "ragpulse_canary_detectable_diff", "detectable"),
    ("E", 'ragpulse_canary_p_value{adjusted="true"}', "p adjusted"),
    ("F", "ragpulse_canary_worse", "worse"),
    ("G", 'ragpulse_canary_samples{side="baseline"}', "n baseline"),
    ("H", 'ragpulse_canary_samples{side="candidate"}', "n candidate"),
)


def _expr(series: str) -> str:
    """`max by` the comparison's labels, so `side`/`adjusted` do not split the rows."""
    return f"max by (metric, baseline, candidate, window) ({series})"


def latest_table(datasource: dict[str, str]) -> dict[str, Any]:
    targets = [
        {
            "refId": ref,
            "datasource": datasource,
            "expr": _expr(series),
            "legendFormat": name,
            "format": "table",
            "instant": True,
        }
        for ref, series, name in COLUMNS
    ]
    return {
        "type": "table",
        "title": "Canary: candidate − baseline per guarded metric",
        "description": "The canary job's latest comparison of the candidate version with "
        "the baseline over the same window: the difference with its 95% interval, the "
        "smallest difference this traffic detects (power canary.power), the p-value "
        "corrected across the guarded metrics, and worse = 1 when the candidate is "
        "significantly worse (RagpulseCanaryWorse). Empty: fewer than two versions with "
        "canary.min_traces scored traces in the window.",
        "targets": targets,
        "transformations": [
            {"id": "merge", "options": {}},
            {
                "id": "organize",
                "options": {
                    "excludeByName": {"Time": True},
                    "renameByName": {f"Value #{ref}": name for ref, _, name in COLUMNS},
                    "indexByName": {
                        "metric": 0,
                        "baseline": 1,
                        "candidate": 2,
                        "window": 3,
                        **{f"Value #{ref}": 4 + i for i, (ref, _, _) in enumerate(COLUMNS)},
                    },
                },
            },
        ],
        "fieldConfig": {
            "defaults": {"decimals": 4, "unit": "none"},
            "overrides": [
                {
                    "matcher": {"id": "byRegexp", "options": "^(n baseline|n candidate|worse)$"},
                    "properties": [{"id": "decimals", "value": 0}],
                },
                {
                    "matcher": {"id": "byName", "options": "worse"},
                    "properties": [
                        {"id": "custom.cellOptions", "value": {"type": "color-background"}},
                        {
                            "id": "thresholds",
                            "value": {
                                "mode": "absolute",
                                "steps": [
                                    {"color": "green", "value": None},
                                    {"color": "red", "value": 1},
                                ],
                            },
                        },
                    ],
                },
            ],
        },
        "options": {"showHeader": True, "cellHeight": "sm"},
    }


def over_time(datasource: dict[str, str]) -> dict[str, Any]:
    series = (
        ("A", "ragpulse_canary_diff", "{{metric}} {{candidate}} − {{baseline}}"),
        ("B", "ragpulse_canary_diff_ci_lower", "{{metric}} CI lower"),
        ("C", "ragpulse_canary_diff_ci_upper", "{{metric}} CI upper"),
        ("D", "ragpulse_canary_detectable_diff", "{{metric}} detectable +"),
        ("E", "-ragpulse_canary_detectable_diff", "{{metric}} detectable −"),
    )
    dashed = {"fill": "dash", "dash": [4, 4]}
    dotted = {"fill": "dot", "dash": [1, 4]}
    return {
        "type": "timeseries",
        "title": "Canary difference over time (with 95% CI and the detectable band)",
        "description": "Candidate minus baseline of each guarded metric as the canary job "
        "recomputes it, between its 95% interval (dashed); the dotted lines are ± the "
        "smallest difference the traffic detects. An interval across zero inside the band "
        "means the traffic cannot tell the versions apart yet.",
        "targets": [
            {"refId": ref, "datasource": datasource, "expr": expr, "legendFormat": legend}
            for ref, expr, legend in series
        ],
        "fieldConfig": {
            "defaults": {"unit": "none", "custom": {"lineWidth": 2}},
            "overrides": [
                {
                    "matcher": {"id": "byRegexp", "options": ".* CI (lower|upper)$"},
                    "properties": [
                        {"id": "custom.lineWidth", "value": 1},
                        {"id": "custom.lineStyle", "value": dashed},
                    ],
                },
                {
                    "matcher": {"id": "byRegexp", "options": ".* detectable [+−]$"},
                    "properties": [
                        {"id": "custom.lineWidth", "value": 1},
                        {"id": "custom.lineStyle", "value": dotted},
                    ],
                },
            ],
        },
        "options": {
            "legend": {"displayMode": "list", "placement": "bottom"},
            "tooltip": {"mode": "multi"},
        },
    }
