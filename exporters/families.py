"""The quality series' families, made from published points: what `/metrics` serves and
what a back-fill writes as OpenMetrics (`exporters.openmetrics`), one code path for both.

- `ragpulse_metric_{value,samples,ci_lower,ci_upper}{metric,window,<group labels>}`: the
  windows' aggregates;
- `ragpulse_drift_score{metric,detector,<group labels>}` and
  `ragpulse_detectable_drop{metric,<group labels>}`: the jobs' detectors (points whose
  window is `drift:<detector>` or `mde`, `collector.jobs.drift.detector`);
- `ragpulse_label_values_{exported,dropped}{label}`: what the label bound kept and left out
  (`exporters.label_bounds`);
- `ragpulse_judge_agreement{,_ci_lower,_ci_upper,_n}{metric,model,stat,window}`,
  `ragpulse_judge_agreement_min{,_pairs}` and
  `ragpulse_metric_corrected{,_ci_lower,_ci_upper,_labelled}{metric,window}`: the
  `judge_agreement` job's points (windows `agreement:*`, `corrected:*`). The corrected
  mean is a family of its own, not an `estimate` label on `ragpulse_metric_value`: a new
  label would change the identity of every existing quality series (dashboards, rules and
  stored history query them as they are), and the correction exists only overall.
  These points are overall and few (metrics x models x stats x windows), so they bypass
  the group-label bound.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from prometheus_client.core import GaugeMetricFamily

from collector.jobs.catalog.judge_agreement import (
    AGREEMENT_PREFIX,
    CORRECTED_PREFIX,
    THRESHOLD_WINDOW,
)
from collector.jobs.drift.detector import DETECTABLE, DRIFT_PREFIX
from collector.jobs.run.publish import QualityPoint
from collector.jobs.windows.labels import LabelLimits
from exporters.canary import canary_families, is_canary
from exporters.label_bounds import bound_points

QUALITY_FAMILIES = (
    ("ragpulse_metric_value", "Latest value of a quality metric over a window and group."),
    ("ragpulse_metric_samples", "Number of samples (n) behind the metric value."),
    ("ragpulse_metric_ci_lower", "Lower bound of the 95% confidence interval of the value."),
    ("ragpulse_metric_ci_upper", "Upper bound of the 95% confidence interval of the value."),
)

DRIFT_FAMILY = (
    "ragpulse_drift_score",
    "CUSUM drift statistic of a metric and group over the last day against the rest of the "
    "longest window, divided by its alarm threshold (>= 1: the detector alarms). detector "
    "page: tuned to alerting.page_drop within the false-page budget; ticket: slow drifts.",
)
MDE_FAMILY = (
    "ragpulse_detectable_drop",
    "Smallest relative change of a metric the paging detector catches within its target "
    "delay (alerting.page_within; judge metrics judge_page_within) at the current volume.",
)
LABEL_FAMILIES = (
    (
        "ragpulse_label_values_exported",
        "Distinct values of a group label in the exported quality series ('other' included).",
    ),
    (
        "ragpulse_label_values_dropped",
        "Values of a group label whose quality series the exporter left out: past "
        "labels.max_values or outside the allow-list (results not bounded by the jobs).",
    ),
)
AGREEMENT_FAMILIES = (
    (
        "ragpulse_judge_agreement",
        "Agreement of the LLM judge with human labels over a window: the label scale's "
        "statistics (cohen_kappa, weighted_kappa, sensitivity, specificity, mae, spearman), "
        "and each quality SLO's good/bad classification against the labels' at its "
        "threshold (slo:NAME:cohen_kappa, slo:NAME:sensitivity, slo:NAME:specificity; "
        "positive = bad).",
    ),
    ("ragpulse_judge_agreement_ci_lower", "Lower bound of the agreement's bootstrap 95% CI."),
    ("ragpulse_judge_agreement_ci_upper", "Upper bound of the agreement's bootstrap 95% CI."),
    (
        "ragpulse_judge_agreement_n",
        "Labelled pairs behind the statistic (sensitivity: human positives; specificity: "
        "negatives); present also when the statistic is undefined.",
    ),
)
AGREEMENT_MIN_FAMILIES = (
    ("ragpulse_judge_agreement_min", "judge.min_agreement: the agreement alert's bar."),
    (
        "ragpulse_judge_agreement_min_pairs",
        "judge.min_agreement_pairs: labelled pairs the agreement alert needs.",
    ),
)
CORRECTED_FAMILIES = (
    (
        "ragpulse_metric_corrected",
        "Judge metric's mean corrected by human labels (prediction-powered inference).",
    ),
    ("ragpulse_metric_corrected_ci_lower", "Lower bound of the corrected mean's 95% CI."),
    ("ragpulse_metric_corrected_ci_upper", "Upper bound of the corrected mean's 95% CI."),
    (
        "ragpulse_metric_corrected_labelled",
        "Labelled traces behind the corrected mean; present also when it is undefined.",
    ),
)


def agreement_families(points: Iterable[QualityPoint]) -> Iterator[GaugeMetricFamily]:
    """The `judge_agreement` job's families (undefined values are left out, never NaN)."""
    value, lower, upper, count = (
        GaugeMetricFamily(name, doc, labels=["metric", "model", "stat", "window"])
        for name, doc in AGREEMENT_FAMILIES
    )
    bar, pairs = (GaugeMetricFamily(name, doc) for name, doc in AGREEMENT_MIN_FAMILIES)
    c_value, c_lower, c_upper, c_count = (
        GaugeMetricFamily(name, doc, labels=["metric", "window"])
        for name, doc in CORRECTED_FAMILIES
    )
    for point in points:
        if point.window == THRESHOLD_WINDOW:
            if point.value is not None:
                bar.add_metric([], point.value)
            pairs.add_metric([], float(point.n))
            continue
        if point.window.startswith(AGREEMENT_PREFIX):
            model = point.group_labels.get("model", "")
            stat = point.group_labels.get("stat", "")
            labels = [point.metric, model, stat, point.window[len(AGREEMENT_PREFIX) :]]
            families = (value, lower, upper, count)
        else:
            labels = [point.metric, point.window[len(CORRECTED_PREFIX) :]]
            families = (c_value, c_lower, c_upper, c_count)
        families[3].add_metric(labels, float(point.n))
        if point.value is None:
            continue
        families[0].add_metric(labels, point.value)
        if point.ci_lower is not None and point.ci_upper is not None:
            families[1].add_metric(labels, point.ci_lower)
            families[2].add_metric(labels, point.ci_upper)
    yield from (value, lower, upper, count, bar, pairs, c_value, c_lower, c_upper, c_count)


def _is_agreement(point: QualityPoint) -> bool:
    return point.window.startswith((AGREEMENT_PREFIX, CORRECTED_PREFIX))


def _own_family(point: QualityPoint) -> bool:
    """Points of the jobs whose families are their own (not the group-label-bound ones)."""
    return _is_agreement(point) or is_canary(point)


def quality_families(
    points: Iterable[QualityPoint], group_labels: Sequence[str], limits: LabelLimits
) -> Iterator[GaugeMetricFamily]:
    """The quality, detector and label-bound families of `points` (label values bounded
    by `limits`, `exporters.label_bounds`)."""
    label_names = ["metric", "window", *group_labels]
    drift_labels = ["metric", "detector", *group_labels]
    mde_labels = ["metric", *group_labels]
    families = [GaugeMetricFamily(name, doc, labels=label_names) for name, doc in QUALITY_FAMILIES]
    value, samples, lower, upper = families
    drift = GaugeMetricFamily(*DRIFT_FAMILY, labels=drift_labels)
    mde = GaugeMetricFamily(*MDE_FAMILY, labels=mde_labels)
    points = list(points)
    bounded = bound_points((p for p in points if not _own_family(p)), group_labels, limits)
    for labels, point in bounded.points:
        if point.window.startswith(DRIFT_PREFIX):
            if point.value is not None:
                detector = point.window[len(DRIFT_PREFIX) :]
                drift.add_metric([labels[0], detector, *labels[2:]], point.value)
            continue
        if point.window == DETECTABLE:
            if point.value is not None:
                mde.add_metric([labels[0], *labels[2:]], point.value)
            continue
        samples.add_metric(labels, float(point.n))
        if point.value is None:
            continue
        value.add_metric(labels, point.value)
        if point.ci_lower is not None and point.ci_upper is not None:
            lower.add_metric(labels, point.ci_lower)
            upper.add_metric(labels, point.ci_upper)
    yield from families
    yield from (drift, mde)
    yield from agreement_families(p for p in points if _is_agreement(p))
    yield from canary_families(p for p in points if is_canary(p))
    exported, dropped = (
        GaugeMetricFamily(name, doc, labels=["label"]) for name, doc in LABEL_FAMILIES
    )
    for label in group_labels:
        exported.add_metric([label], float(bounded.exported.get(label, 0)))
        dropped.add_metric([label], float(bounded.dropped.get(label, 0)))
    yield from (exported, dropped)
