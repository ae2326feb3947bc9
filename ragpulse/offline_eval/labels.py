"""The judge's metrics of an offline run against the dataset's human labels: agreement
statistics and label-corrected means, into the JSON document and as a table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evaluators.runner import EvaluationResult
from ragpulse.offline_eval.render import fmt, layout

if TYPE_CHECKING:
    from evaluators.labelled import LabelledMetric


def compare_judges_with_labels(
    result: EvaluationResult, labels: Sequence[Mapping[str, float]], seed: int = 0
) -> dict[str, LabelledMetric]:
    """Each evaluated judge metric that has labelled, scored samples, against the labels."""
    out: dict[str, LabelledMetric] = {}
    if not any(labels):
        return out
    from evaluators.labelled import compare_with_labels  # scipy.stats: only when labelled

    for name, outcomes in result.per_sample.items():
        found = compare_with_labels(name, outcomes, labels, seed=seed)
        if found is not None:
            out[name] = found
    return out


def add_label_results(document: dict[str, Any], labelled: Mapping[str, LabelledMetric]) -> None:
    """Into the JSON document: `judge_agreement` {metric: {scale, n, stats, by_model?}} and
    `aggregate[metric].corrected` {value, ci_lower, ci_upper, n_labelled}."""
    if not labelled:
        return
    document["judge_agreement"] = {m: lm.agreement_dict() for m, lm in labelled.items()}
    for metric, lm in labelled.items():
        if metric in document["aggregate"]:
            document["aggregate"][metric]["corrected"] = lm.corrected_dict()


def render_agreement_table(labelled: Mapping[str, LabelledMetric]) -> str:
    """metric, judge model, statistic, value, 95% CI, n — then each corrected mean."""
    rows: list[tuple[str, ...]] = [("metric", "model", "statistic", "value", "95% CI", "n")]
    for metric, lm in labelled.items():
        per_model = {"all": lm.agreement.to_dict()}
        per_model |= {m: a.to_dict() for m, a in lm.by_model.items()}
        for model, stats in per_model.items():
            for stat, d in stats.items():
                ci = _ci(d.get("ci_lower"), d.get("ci_upper"))
                if "undefined" in d:
                    ci = f"undefined: {d['undefined']}"
                rows.append((metric, model, stat, fmt(d["value"]), ci, str(d["n"])))
        c = lm.corrected_dict()
        ci = _ci(c["ci_lower"], c["ci_upper"])
        if "undefined" in c:
            ci = f"undefined: {c['undefined']}"
        rows.append((metric, "all", "corrected mean", fmt(c["value"]), ci, str(c["n_labelled"])))
    return layout(rows, left=3)


def _ci(lo: float | None, hi: float | None) -> str:
    return f"[{fmt(lo)}, {fmt(hi)}]" if lo is not None and hi is not None else "-"
