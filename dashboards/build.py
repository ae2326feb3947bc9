# ruff: noqa: E501  (panel descriptions and PromQL read best on one line)
"""Generate the Grafana dashboards (JSON) and the quality alert rules from the registry.

Run `python dashboards/build.py` after changing a metric, a job's metrics, a band or a
panel; the generated files are what ships (tests/dashboards/test_generated.py checks they
are up to date). The overview has one row per scheduled job and a panel for every metric
the job produces (`metrics_view.scheduled`): a metric added to a job gets its panel here,
and, once it declares a direction in the registry, colours and drift rules.
Colours follow the seeds' bands (`metrics_view.BANDS`: seed 004 §11.2, seed 000).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(HERE.parent))

from dashboards import (  # noqa: E402
    canary_panels,
    distributions,
    drift_rule_tests,
    metrics_view,
    quality_rules,
    versions,
)
from dashboards.metrics_view import BANDS, GOAL_METRICS, describe  # noqa: E402

OUT = HERE / "grafana" / "dashboards"
RULES = HERE / "prometheus" / "rules" / "quality.yml"
DRIFT_TESTS = HERE / "prometheus" / "tests" / "drift_test.yml"
DS = {"type": "prometheus", "uid": "${datasource}"}
SEL = 'tenant=~"$tenant"'
"""The score histograms' selector (labelled by the first group label only)."""
QSEL = f'{SEL},version=""'
"""The quality series' selector: the overall value or a tenant's, never a version's
(results are grouped one label at a time; the versions row draws those)."""


def _q(family: str, metric: str, window: str) -> str:
    return f'{family}{{metric="{metric}",window="{window}",{QSEL}}}'


def _unit(metric: str) -> dict[str, Any]:
    unit = describe(metric).unit
    decimals = {"count": 0, "ms": 1, "bleu": 1}.get(unit, 3)
    return {"unit": metrics_view.GRAFANA_UNITS.get(unit, "none"), "decimals": decimals}


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
        "description": f"Latest {metric} over the last hour. {metrics_view.panel_text(metric)}",
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
                "thresholds": metrics_view.thresholds(metric),
                "color": {"mode": "thresholds"},
                **_unit(metric),
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
    targets: list[dict[str, Any]] = [
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
    interval = describe(metric).interval
    if not interval:  # a single value without a confidence interval (counts, distances)
        targets = [t for t in targets if t["refId"] not in ("B", "C")]
    for t in targets:
        t["datasource"] = DS
    hidden = {"legend": False, "tooltip": False, "viz": False}
    band = " with its 95% confidence band" if interval else ""
    return {
        "type": "timeseries",
        "title": f"{metric}: 1h{' with 95% CI' if interval else ''} against 7d",
        "description": f"{metric} over the last hour (line){band}, and the 7-day value "
        f"(dashed) as the baseline; n is on the right axis. {metrics_view.panel_text(metric)}",
        "targets": targets,
        "fieldConfig": {
            "defaults": {
                "thresholds": metrics_view.thresholds(metric),
                "custom": {
                    "thresholdsStyle": {"mode": "dashed" if metric in BANDS else "off"},
                    "lineWidth": 2,
                },
                **_unit(metric),
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
                        {"id": "decimals", "value": 0},
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


def _templating(with_tenant: bool, with_version: bool = False) -> dict[str, Any]:
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
    if with_version:
        items.append(versions.variable(DS))
    return {"list": items}


def _dashboard(
    uid: str,
    title: str,
    panels: list[dict[str, Any]],
    tenant: bool,
    description: str,
    version: bool = False,
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
        "templating": _templating(tenant, version),
        "annotations": {"list": []},
        "panels": panels,
    }


def alerting_row(layout: Layout) -> None:
    """The drift detectors behind the page and ticket alerts, and what they can catch."""
    layout.row("Alerting: drift detectors")
    layout.add(
        _ts(
            "Drift detectors (1 = alarm)",
            "Each series' CUSUM statistic over the last 24h against the rest of the 7 days, "
            "divided by its alarm threshold: page reaches 1 -> RagpulseQualityDropPage "
            "(critical), ticket reaches 1 -> RagpulseQualityDriftTicket (warning). The "
            "threshold keeps false alarms within the weekly budget over all series together.",
            [
                (
                    f'max by (metric, tenant) (ragpulse_drift_score{{detector="page",{QSEL}}})',
                    "page {{metric}} {{tenant}}",
                ),
                (
                    f'max by (metric, tenant) (ragpulse_drift_score{{detector="ticket",{QSEL}}})',
                    "ticket {{metric}} {{tenant}}",
                ),
            ],
        ),
        12,
        8,
        0,
    )
    layout.add(
        _ts(
            "Smallest drop paged within the target delay",
            "At each series' current volume, the relative drop the paging detector catches "
            "within alerting.page_within (LLM-judge metrics: judge_page_within) on average. "
            "Too large? More traffic sampled for it: `ragpulse plan --detect 10% --within 3h`.",
            [(f"ragpulse_detectable_drop{{{QSEL}}}", "{{metric}} {{tenant}}")],
            "percentunit",
        ),
        12,
        8,
        12,
    )
    layout.y += 8


def overview() -> dict[str, Any]:
    metrics_view.check_bands()
    layout = Layout()
    for _job, title, metrics in metrics_view.scheduled():
        layout.row(title)
        # stat panels: seed 004 §11.1's metrics first, then those with seed bands
        marked = [m for m in metrics if m in GOAL_METRICS] + [
            m for m in metrics if m in BANDS and m not in GOAL_METRICS
        ]
        headline = marked[:6] or list(metrics[:3])
        width = 24 // len(headline)
        for i, metric in enumerate(headline):
            layout.add(_stat(metric), width, 4, width * i)
        layout.y += 4
        for i, metric in enumerate(metrics):
            layout.add(_band(metric), 8, 8, 8 * (i % 3))
            if i % 3 == 2 or i == len(metrics) - 1:
                layout.y += 8
    versions_row(layout)
    alerting_row(layout)
    return _dashboard(
        "ragpulse-overview",
        "ragpulse — RAG quality overview",
        layout.panels,
        True,
        "Quality of the RAG system per tier: the last hour with its 95% CI against the 7-day baseline.",
        version=True,
    )


def versions_row(layout: Layout) -> None:
    """The guarded metrics per version (`dashboards/versions.py`): the latest 24h table,
    then each metric's 1h value per version with its interval."""
    layout.row("Versions: the guarded metrics per version")
    layout.add(versions.latest_table(DS), 24, 8, 0)
    layout.y += 8
    layout.add(canary_panels.latest_table(DS), 12, 8, 0)
    layout.add(canary_panels.over_time(DS), 12, 8, 12)
    layout.y += 8
    metrics = versions.guarded()
    for i, metric in enumerate(metrics):
        layout.add(versions.over_time(metric, _unit(metric), DS), 8, 8, 8 * (i % 3))
        if i % 3 == 2 or i == len(metrics) - 1:
            layout.y += 8


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


MAIN_AGREEMENT = 'stat=~"cohen_kappa|weighted_kappa|spearman"'
"""The statistic RagpulseJudgeDisagreesWithHumans watches on each label scale."""


def judge_against_humans(layout: Layout) -> None:
    """The judge_agreement job's series: agreement with human labels per metric and
    model, the labelled pairs behind it, and each judge metric's raw mean beside its
    label-corrected one."""
    layout.row("LLM judge against human labels")
    layout.add(
        _ts(
            "Judge agreement with humans (7d)",
            "Main agreement statistic of the judge with human labels per metric and judge "
            "model (kappa; Spearman on continuous scales), with the alert bar "
            "judge.min_agreement (RagpulseJudgeDisagreesWithHumans).",
            [
                (
                    f'max by (metric, model, stat) (ragpulse_judge_agreement{{window="7d",{MAIN_AGREEMENT}}})',
                    "{{metric}} {{model}} {{stat}}",
                ),
                ("max(ragpulse_judge_agreement_min)", "alert bar"),
            ],
        ),
        8,
        8,
        0,
    )
    layout.add(
        _ts(
            "Labelled pairs (7d)",
            "Traces both scored by the judge and labelled by humans behind the agreement; "
            "the alert needs judge.min_agreement_pairs of them.",
            [
                (
                    f'max by (metric, model) (ragpulse_judge_agreement_n{{window="7d",{MAIN_AGREEMENT}}})',
                    "{{metric}} {{model}}",
                ),
                ("max(ragpulse_judge_agreement_min_pairs)", "alert needs"),
            ],
        ),
        8,
        8,
        8,
    )
    layout.add(
        _ts(
            "Judge mean: raw vs corrected (24h)",
            "Each judge metric's raw mean (ragpulse_metric_value, overall) beside its mean "
            "corrected by the human labels (prediction-powered inference); a gap is the "
            "judge's bias.",
            [
                (
                    'max by (metric) (ragpulse_metric_corrected{window="24h"})',
                    "{{metric}} corrected",
                ),
                (
                    'max by (metric) (ragpulse_metric_value{window="24h",tenant="",version=""} and on (metric, window) ragpulse_metric_corrected)',
                    "{{metric}} raw",
                ),
            ],
        ),
        8,
        8,
        16,
    )
    layout.y += 8


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
    layout.add(
        _ts(
            "Consumer stuck",
            "Seconds the consumer has kept failing the same batch (0 = healthy; /readyz is "
            "503 past kafka.unready_after_failures) and how many times it failed.",
            [
                ("max(ragpulse_consumer_stuck_seconds)", "stuck seconds"),
                ("max(ragpulse_consumer_batch_failures)", "failures of the batch"),
            ],
        ),
        8,
        8,
        8,
    )
    layout.add(
        _ts(
            "Texts outside the embedding model's scripts",
            "Share of embedded texts in a script the configured model was not trained on "
            "(e.g. Cyrillic with an English-only model): above 0.5, similarity metrics are "
            "unreliable; choose a multilingual model.",
            [
                ("max by (model) (ragpulse_embedding_script_mismatch_ratio)", "{{model}}"),
            ],
            "percentunit",
        ),
        8,
        8,
        16,
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
    judge_against_humans(layout)
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
    layout.y += 8
    layout.row("Label values")
    layout.add(
        _ts(
            "Label values",
            "Distinct values of each group label in the jobs' longest window (seen), those "
            "that keep series of their own (kept, at most labels.max_values) and in the "
            "exported quality series ('other' included). Seen above kept: the rest is "
            "folded into 'other'.",
            [
                ("max by (label) (ragpulse_label_values_seen)", "seen {{label}}"),
                ("max by (label) (ragpulse_label_values_kept)", "kept {{label}}"),
                ("max by (label) (ragpulse_label_values_exported)", "exported {{label}}"),
            ],
        ),
        12,
        8,
        0,
    )
    layout.add(
        _ts(
            "Label values folded",
            "Values folded into 'other' per job run past labels.max_values, and quality "
            "series the exporter left out past the bound (RagpulseLabelValuesFolded).",
            [
                (
                    f"sum by (label) (increase(ragpulse_label_values_folded_total[{r}]))",
                    "folded {{label}}",
                ),
                ("max by (label) (ragpulse_label_values_dropped)", "dropped by exporter {{label}}"),
            ],
        ),
        12,
        8,
        12,
    )
    return _dashboard(
        "ragpulse-operations",
        "ragpulse — operations",
        layout.panels,
        False,
        "Ingest, consumer lag, LLM-judge calls and cost, and scheduled job health.",
    )


def score_distributions() -> dict[str, Any]:
    """A heatmap with exemplars per per-trace metric (`dashboards/distributions.py`)."""
    layout = Layout()
    for title, metrics in distributions.rows():
        layout.row(title)
        for i, metric in enumerate(metrics):
            layout.add(distributions.heatmap(metric, SEL, DS), 8, 8, 8 * (i % 3))
            if i % 3 == 2 or i == len(metrics) - 1:
                layout.y += 8
    return _dashboard(
        "ragpulse-distributions",
        "ragpulse — score distributions and exemplars",
        layout.panels,
        True,
        "Per-trace scores of every quality metric as heatmaps; the exemplars link a bucket to a trace in it.",
    )


def generated() -> dict[Path, str]:
    """Every generated file and its content."""
    boards = (
        ("overview.json", overview()),
        ("operations.json", operations()),
        ("distributions.json", score_distributions()),
    )
    files = {
        OUT / name: json.dumps(board, indent=2, ensure_ascii=False) + "\n" for name, board in boards
    }
    files[RULES] = quality_rules.render()
    files[DRIFT_TESTS] = drift_rule_tests.render()
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
