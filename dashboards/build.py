# ruff: noqa: E501  (panel descriptions and PromQL read best on one line)
"""Generate the Grafana dashboards (JSON) from one description of the tiers.

Run `python dashboards/build.py` after changing a panel; the JSON files are what ships.
Thresholds follow seed 004 §11.2 (needs attention / good / excellent).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "grafana" / "dashboards"
DS = {"type": "prometheus", "uid": "${datasource}"}
SEL = 'tenant=~"$tenant"'

# metric -> (attention below, excellent above) from seed 004 §11.2; None: no threshold.
THRESHOLDS: dict[str, tuple[float, float]] = {
    "hit_rate@1": (0.5, 0.8),
    "mrr": (0.5, 0.8),
    "ndcg@10": (0.5, 0.8),
    "faithfulness": (0.7, 0.9),
    "e2e_score": (0.6, 0.8),
    "judge_accuracy": (0.85, 0.95),
    "judge_consistency": (0.85, 0.95),
}

TIERS: list[tuple[str, list[str]]] = [
    (
        "Retrieval (Tier 1, real-users benchmark)",
        ["hit_rate@1", "mrr", "ndcg@10", "hit_rate@5", "recall@10", "precision@5"],
    ),
    (
        "Generation and end-to-end (LLM judge, text)",
        [
            "faithfulness",
            "answer_relevance",
            "context_relevance",
            "e2e_score",
            "rougeL_f",
            "semantic_similarity",
        ],
    ),
    (
        "Production judge (judge pipeline) and our judge",
        [
            "judge_accuracy",
            "judge_precision",
            "judge_recall",
            "judge_f1",
            "judge_latency_ms",
            "judge_consistency",
        ],
    ),
    (
        "UX and embeddings",
        [
            "cache_hit_rate",
            "cache_hit_rate_actual",
            "context_preservation",
            "multi_turn_consistency",
            "silhouette",
            "intra_cluster_similarity",
        ],
    ),
]


def _q(family: str, metric: str, window: str) -> str:
    return f'{family}{{metric="{metric}",window="{window}",{SEL}}}'


def _thresholds(metric: str) -> dict[str, Any]:
    if metric not in THRESHOLDS:
        return {"mode": "absolute", "steps": [{"color": "blue", "value": None}]}
    low, high = THRESHOLDS[metric]
    return {
        "mode": "absolute",
        "steps": [
            {"color": "red", "value": None},
            {"color": "yellow", "value": low},
            {"color": "green", "value": high},
        ],
    }


class Layout:
    def __init__(self) -> None:
        self.panels: list[dict[str, Any]] = []
        self.y = 0
        self.next_id = 1

    def row(self, title: str) -> None:
        self.panels.append(
            {
                "type": "row",
                "title": title,
                "id": self.next_id,
                "collapsed": False,
                "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y},
                "panels": [],
            }
        )
        self.next_id += 1
        self.y += 1

    def add(self, panel: dict[str, Any], w: int, h: int, x: int) -> None:
        panel["id"] = self.next_id
        panel["datasource"] = DS
        panel["gridPos"] = {"h": h, "w": w, "x": x, "y": self.y}
        self.next_id += 1
        self.panels.append(panel)


def _stat(metric: str) -> dict[str, Any]:
    return {
        "type": "stat",
        "title": f"{metric} (1h)",
        "description": f"Latest {metric} over the last hour; colours follow seed 004 §11.2.",
        "targets": [
            {
                "refId": "A",
                "datasource": DS,
                "expr": _q("ragpulse_metric_value", metric, "1h"),
                "legendFormat": "1h",
            }
        ],
        "fieldConfig": {
            "defaults": {
                "thresholds": _thresholds(metric),
                "color": {"mode": "thresholds"},
                "decimals": 3,
            },
            "overrides": [],
        },
        "options": {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "colorMode": "background",
            "graphMode": "none",
        },
    }


def _band(metric: str) -> dict[str, Any]:
    targets = [
        {"refId": "A", "expr": _q("ragpulse_metric_value", metric, "1h"), "legendFormat": "1h"},
        {
            "refId": "B",
            "expr": _q("ragpulse_metric_ci_lower", metric, "1h"),
            "legendFormat": "1h CI lower",
        },
        {
            "refId": "C",
            "expr": _q("ragpulse_metric_ci_upper", metric, "1h"),
            "legendFormat": "1h CI upper",
        },
        {"refId": "D", "expr": _q("ragpulse_metric_value", metric, "7d"), "legendFormat": "7d"},
        {
            "refId": "E",
            "expr": _q("ragpulse_metric_samples", metric, "1h"),
            "legendFormat": "n (1h)",
        },
    ]
    for t in targets:
        t["datasource"] = DS
    hidden = {"legend": False, "tooltip": False, "viz": False}
    return {
        "type": "timeseries",
        "title": f"{metric}: 1h with 95% CI against 7d",
        "description": f"{metric} over the last hour (line) with its 95% confidence band, "
        "and the 7-day value (dashed) as the baseline; n is on the right axis.",
        "targets": targets,
        "fieldConfig": {
            "defaults": {
                "thresholds": _thresholds(metric),
                "custom": {
                    "thresholdsStyle": {"mode": "dashed" if metric in THRESHOLDS else "off"},
                    "lineWidth": 2,
                },
            },
            "overrides": [
                {
                    "matcher": {"id": "byName", "options": "1h CI upper"},
                    "properties": [
                        {"id": "custom.fillBelowTo", "value": "1h CI lower"},
                        {"id": "custom.lineWidth", "value": 0},
                        {"id": "custom.fillOpacity", "value": 20},
                        {"id": "custom.hideFrom", "value": {**hidden, "legend": True}},
                    ],
                },
                {
                    "matcher": {"id": "byName", "options": "1h CI lower"},
                    "properties": [
                        {"id": "custom.lineWidth", "value": 0},
                        {"id": "custom.hideFrom", "value": {**hidden, "legend": True}},
                    ],
                },
                {
                    "matcher": {"id": "byName", "options": "7d"},
                    "properties": [
                        {"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}}
                    ],
                },
                {
                    "matcher": {"id": "byName", "options": "n (1h)"},
                    "properties": [
                        {"id": "custom.axisPlacement", "value": "right"},
                        {"id": "unit", "value": "short"},
                        {"id": "custom.drawStyle", "value": "bars"},
                        {"id": "custom.fillOpacity", "value": 10},
                    ],
                },
            ],
        },
        "options": {
            "legend": {"displayMode": "list", "placement": "bottom"},
            "tooltip": {"mode": "multi"},
        },
    }


def _templating(with_tenant: bool) -> dict[str, Any]:
    items: list[dict[str, Any]] = [
        {
            "name": "datasource",
            "type": "datasource",
            "query": "prometheus",
            "label": "Data source",
            "current": {},
            "hide": 0,
            "refresh": 1,
        },
    ]
    if with_tenant:
        items.append(
            {
                "name": "tenant",
                "type": "query",
                "label": "Tenant",
                "datasource": DS,
                "query": {
                    "query": "label_values(ragpulse_metric_value, tenant)",
                    "refId": "tenant",
                },
                "definition": "label_values(ragpulse_metric_value, tenant)",
                "includeAll": True,
                "allValue": "",
                "multi": False,
                "refresh": 2,
                "current": {"text": "All", "value": "$__all"},
                "description": "All = the overall value over every tenant (tenant label empty).",
            }
        )
    return {"list": items}


def _dashboard(
    uid: str, title: str, panels: list[dict[str, Any]], tenant: bool, description: str
) -> dict[str, Any]:
    return {
        "uid": uid,
        "title": title,
        "description": description,
        "tags": ["ragpulse"],
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "refresh": "1m",
        "time": {"from": "now-24h", "to": "now"},
        "timezone": "utc",
        "templating": _templating(tenant),
        "annotations": {"list": []},
        "panels": panels,
    }


def overview() -> dict[str, Any]:
    layout = Layout()
    for title, metrics in TIERS:
        layout.row(title)
        for i, metric in enumerate(metrics[:3]):
            layout.add(_stat(metric), 8, 4, 8 * i)
        layout.y += 4
        for i, metric in enumerate(metrics):
            layout.add(_band(metric), 8, 8, 8 * (i % 3))
            if i % 3 == 2:
                layout.y += 8
    return _dashboard(
        "ragpulse-overview",
        "ragpulse — RAG quality overview",
        layout.panels,
        True,
        "Quality of the RAG system per tier: the last hour with its 95% CI against the 7-day baseline.",
    )


def _ts(
    title: str, description: str, targets: list[tuple[str, str]], unit: str = "short"
) -> dict[str, Any]:
    return {
        "type": "timeseries",
        "title": title,
        "description": description,
        "targets": [
            {"refId": chr(65 + i), "datasource": DS, "expr": e, "legendFormat": leg}
            for i, (e, leg) in enumerate(targets)
        ],
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {
            "legend": {"displayMode": "list", "placement": "bottom"},
            "tooltip": {"mode": "multi"},
        },
    }


def operations() -> dict[str, Any]:
    r = "$__rate_interval"
    layout = Layout()
    layout.row("Ingest")
    layout.add(
        _ts(
            "Ingest rate",
            "Messages consumed per second by topic, and traces stored.",
            [
                (
                    f"sum by (topic) (rate(ragpulse_traces_consumed_total[{r}]))",
                    "consumed {{topic}}",
                ),
                (f"sum(rate(ragpulse_traces_stored_total[{r}]))", "stored"),
            ],
            "ops",
        ),
        8,
        8,
        0,
    )
    layout.add(
        _ts(
            "Invalid messages by reason",
            "Dead-lettered messages per second by reason; inspect dead_letters. Field "
            "warnings: stored traces whose optional field did not fit (kept raw under "
            "metadata._invalid).",
            [
                (f"sum by (reason) (rate(ragpulse_traces_invalid_total[{r}]))", "{{reason}}"),
                (
                    f"sum by (field) (rate(ragpulse_traces_field_warnings_total[{r}]))",
                    "field warning {{field}}",
                ),
            ],
            "ops",
        ),
        8,
        8,
        8,
    )
    layout.add(
        _ts(
            "Consumer lag",
            "Messages not yet consumed, by topic.",
            [
                ("sum by (topic) (ragpulse_consumer_lag)", "{{topic}}"),
            ],
        ),
        8,
        8,
        16,
    )
    layout.y += 8
    layout.add(
        _ts(
            "Sampled traces",
            "Traces selected per second by purpose.",
            [
                (f"sum by (purpose) (rate(ragpulse_traces_sampled_total[{r}]))", "{{purpose}}"),
            ],
            "ops",
        ),
        8,
        8,
        0,
    )
    layout.y += 8
    layout.row("LLM judge")
    layout.add(
        _ts(
            "Judge calls by status",
            "Judge requests per second by model and status.",
            [
                (
                    f"sum by (model, status) (rate(ragpulse_judge_requests_total[{r}]))",
                    "{{model}} {{status}}",
                ),
            ],
            "ops",
        ),
        6,
        8,
        0,
    )
    layout.add(
        _ts(
            "Judge error rate",
            "Share of judge requests that failed.",
            [
                (
                    f'(sum by (model) (rate(ragpulse_judge_requests_total{{status="error"}}[{r}])) or 0 * sum by (model) (rate(ragpulse_judge_requests_total[{r}]))) / sum by (model) (rate(ragpulse_judge_requests_total[{r}]))',
                    "{{model}}",
                ),
            ],
            "percentunit",
        ),
        6,
        8,
        6,
    )
    layout.add(
        _ts(
            "Judge latency",
            "p50 and p95 of judge call latency.",
            [
                (
                    f"histogram_quantile(0.5, sum by (le) (rate(ragpulse_judge_latency_seconds_bucket[{r}])))",
                    "p50",
                ),
                (
                    f"histogram_quantile(0.95, sum by (le) (rate(ragpulse_judge_latency_seconds_bucket[{r}])))",
                    "p95",
                ),
            ],
            "s",
        ),
        6,
        8,
        12,
    )
    layout.add(
        _ts(
            "Judge spend",
            "US dollars spent on the judge in the last hour and tokens per second.",
            [
                ("sum by (model) (increase(ragpulse_judge_cost_usd_total[1h]))", "USD/h {{model}}"),
                (
                    f"sum by (model, kind) (rate(ragpulse_judge_tokens_total[{r}]))",
                    "tokens/s {{model}} {{kind}}",
                ),
            ],
        ),
        6,
        8,
        18,
    )
    layout.y += 8
    layout.row("Scheduled jobs")
    layout.add(
        _ts(
            "Job runs by status",
            "Runs per minute by job and status (error: see the logs).",
            [
                (
                    f"sum by (job, status) (rate(ragpulse_job_runs_total[{r}])) * 60",
                    "{{job}} {{status}}",
                ),
            ],
        ),
        8,
        8,
        0,
    )
    layout.add(
        _ts(
            "Job duration",
            "Mean duration of job runs.",
            [
                (
                    f"sum by (job) (rate(ragpulse_job_duration_seconds_sum[{r}])) / sum by (job) (rate(ragpulse_job_duration_seconds_count[{r}]))",
                    "{{job}}",
                ),
            ],
            "s",
        ),
        8,
        8,
        8,
    )
    layout.add(
        _ts(
            "Time since last success",
            "Seconds since each job last succeeded.",
            [
                ("time() - ragpulse_job_last_success_timestamp_seconds", "{{job}}"),
            ],
            "s",
        ),
        8,
        8,
        16,
    )
    return _dashboard(
        "ragpulse-operations",
        "ragpulse — operations",
        layout.panels,
        False,
        "Ingest, consumer lag, LLM-judge calls and cost, and scheduled job health.",
    )


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, board in (("overview.json", overview()), ("operations.json", operations())):
        (OUT / name).write_text(
            json.dumps(board, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )


if __name__ == "__main__":
    main()
