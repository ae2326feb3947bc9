"""The canary job's families: candidate against baseline per guarded metric.

    ragpulse_canary_diff{metric,baseline,candidate,window}          candidate - baseline
    ragpulse_canary_diff_ci_lower / _ci_upper{...}                   its 95% interval
    ragpulse_canary_p_value{...,adjusted="false"|"true"}             raw / corrected p
    ragpulse_canary_significant{...}                                 1 when corrected p < alpha
    ragpulse_canary_worse{...}                                       1 when significantly worse
    ragpulse_canary_detectable_diff{...}                             smallest |diff| detectable
    ragpulse_canary_effect_size{...}                                 d_z, Hedges' g or Cohen's h
    ragpulse_canary_samples{...,side="baseline"|"candidate"|"pairs"} traces behind it

Points come from `collector.jobs.catalog.canary` (windows `canary:<window>`, group key = the
statistic). There is one pair of versions at a time and a handful of guarded metrics, so
these bypass the group-label bound; the version names were cleaned like label values.
Undefined values (e.g. no effect size on constant scores) are left out, never NaN.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from prometheus_client.core import GaugeMetricFamily

from collector.jobs.catalog.canary import PREFIX
from collector.jobs.run.publish import QualityPoint

LABELS = ["metric", "baseline", "candidate", "window"]
SIMPLE = {
    "significant": (
        "ragpulse_canary_significant",
        "1 when the candidate differs from the baseline significantly on the metric "
        "(p corrected across the guarded metrics below canary.alpha), else 0.",
    ),
    "worse": (
        "ragpulse_canary_worse",
        "1 when the candidate is significantly worse than the baseline on the metric "
        "(in its direction): RagpulseCanaryWorse.",
    ),
    "detectable": (
        "ragpulse_canary_detectable_diff",
        "Smallest absolute difference this traffic detects (two-sided at canary.alpha with "
        "power canary.power): a smaller true difference may well go unnoticed.",
    ),
    "effect_size": (
        "ragpulse_canary_effect_size",
        "Standardised difference: Cohen's d_z (paired), Hedges' g or Cohen's h (unpaired).",
    ),
}
SIDES = {"n_baseline": "baseline", "n_candidate": "candidate", "pairs": "pairs"}


def is_canary(point: QualityPoint) -> bool:
    return point.window.startswith(PREFIX)


def canary_families(points: Iterable[QualityPoint]) -> Iterator[GaugeMetricFamily]:
    diff = GaugeMetricFamily(
        "ragpulse_canary_diff",
        "Candidate minus baseline version of a guarded metric over the same window "
        "(canary.window; `ragpulse compare` statistics).",
        labels=LABELS,
    )
    lower = GaugeMetricFamily(
        "ragpulse_canary_diff_ci_lower", "Lower bound of the difference's 95% CI.", labels=LABELS
    )
    upper = GaugeMetricFamily(
        "ragpulse_canary_diff_ci_upper", "Upper bound of the difference's 95% CI.", labels=LABELS
    )
    p_value = GaugeMetricFamily(
        "ragpulse_canary_p_value",
        "p-value of the difference; adjusted=true after the correction across the guarded "
        "metrics (canary.correction: holm or bh).",
        labels=[*LABELS, "adjusted"],
    )
    samples = GaugeMetricFamily(
        "ragpulse_canary_samples",
        "Scored traces behind the comparison per side, and the pairs when it is paired.",
        labels=[*LABELS, "side"],
    )
    simple = {
        stat: GaugeMetricFamily(name, doc, labels=LABELS) for stat, (name, doc) in SIMPLE.items()
    }
    for point in points:
        if point.value is None:
            continue
        labels = [
            point.metric,
            point.group_labels.get("baseline", ""),
            point.group_labels.get("candidate", ""),
            point.window[len(PREFIX) :],
        ]
        stat = point.group_labels.get("stat", point.group_key)
        if stat == "diff":
            diff.add_metric(labels, point.value)
            if point.ci_lower is not None and point.ci_upper is not None:
                lower.add_metric(labels, point.ci_lower)
                upper.add_metric(labels, point.ci_upper)
        elif stat in ("p_value", "p_adjusted"):
            p_value.add_metric([*labels, str(stat == "p_adjusted").lower()], point.value)
        elif stat in SIDES:
            samples.add_metric([*labels, SIDES[stat]], point.value)
        elif stat in simple:
            simple[stat].add_metric(labels, point.value)
    yield from (diff, lower, upper, p_value, samples, *simple.values())
