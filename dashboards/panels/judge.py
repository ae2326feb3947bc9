# ruff: noqa: E501  (PromQL reads best on one line)
"""The LLM judge's section: how good the judges are and what ours costs.

On the overview, the production judge's quality against its labels (`judge_pipeline`) and
our own judge's consistency, errors and latency (`judge_consistency`), one row per job
from the registry. On the operations dashboard, our judge's calls (rate, errors, latency,
spend) and its agreement with human labels (the `judge_agreement` job's series: agreement
per metric and model, the labelled pairs behind it, and each judge metric's raw mean
beside its label-corrected one).
"""

from __future__ import annotations

from collections.abc import Sequence

from dashboards.panels.common import RATE, lines
from dashboards.panels.layout import Cell, Section
from dashboards.panels.quality import job_rows

JOBS = ("judge_pipeline", "judge_consistency")
MAIN_AGREEMENT = 'stat=~"cohen_kappa|weighted_kappa|spearman"'
"""The statistic RagpulseJudgeDisagreesWithHumans watches on each label scale."""


def rows(scheduled: Sequence[tuple[str, str, tuple[str, ...]]]) -> list[tuple[str, Section]]:
    return job_rows(scheduled, JOBS)


def calls() -> Section:
    """Our judge's requests: rate by status, error share, latency, spend."""
    requests = "ragpulse_judge_requests_total"
    errors = f'(sum by (model) (rate({requests}{{status="error"}}[{RATE}])) or 0 * sum by (model) (rate({requests}[{RATE}]))) / sum by (model) (rate({requests}[{RATE}]))'
    latency = f"sum by (le) (rate(ragpulse_judge_latency_seconds_bucket[{RATE}]))"
    line = [
        lines(
            "Judge calls by status",
            "Judge requests per second by model and status.",
            [(f"sum by (model, status) (rate({requests}[{RATE}]))", "{{model}} {{status}}")],
            "ops",
        ),
        lines(
            "Judge error rate",
            "Share of judge requests that failed.",
            [(errors, "{{model}}")],
            "percentunit",
        ),
        lines(
            "Judge latency",
            "p50 and p95 of judge call latency.",
            [
                (f"histogram_quantile(0.5, {latency})", "p50"),
                (f"histogram_quantile(0.95, {latency})", "p95"),
            ],
            "s",
        ),
        lines(
            "Judge spend",
            "US dollars spent on the judge in the last hour and tokens per second.",
            [
                ("sum by (model) (increase(ragpulse_judge_cost_usd_total[1h]))", "USD/h {{model}}"),
                (
                    f"sum by (model, kind) (rate(ragpulse_judge_tokens_total[{RATE}]))",
                    "tokens/s {{model}} {{kind}}",
                ),
            ],
        ),
    ]
    return Section("LLM judge", [[Cell(panel, w=6) for panel in line]])


def against_humans() -> Section:
    """Agreement with human labels, the labelled pairs behind it, raw against corrected."""
    line = [
        lines(
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
        lines(
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
        lines(
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
    ]
    return Section("LLM judge against human labels", [[Cell(panel) for panel in line]])
