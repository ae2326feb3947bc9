"""The quality series' families, made from published points: what `/metrics` serves and
what a back-fill writes as OpenMetrics (`exporters.openmetrics`), one code path for both.

- `ragpulse_metric_{value,samples,ci_lower,ci_upper}{metric,window,<group labels>}`: the
  windows' aggregates;
- `ragpulse_drift_score{metric,detector,<group labels>}` and
  `ragpulse_detectable_drop{metric,<group labels>}`: the jobs' detectors (points whose
  window is `drift:<detector>` or `mde`, `collector.jobs.drift`);
- `ragpulse_label_values_{exported,dropped}{label}`: what the label bound kept and left out
  (`exporters.label_bounds`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from prometheus_client.core import GaugeMetricFamily

from collector.jobs.drift import DETECTABLE, DRIFT_PREFIX
from collector.jobs.labels import LabelLimits
from collector.jobs.publish import QualityPoint
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
    bounded = bound_points(points, group_labels, limits)
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
    exported, dropped = (
        GaugeMetricFamily(name, doc, labels=["label"]) for name, doc in LABEL_FAMILIES
    )
    for label in group_labels:
        exported.add_metric([label], float(bounded.exported.get(label, 0)))
        dropped.add_metric([label], float(bounded.dropped.get(label, 0)))
    yield from (exported, dropped)
