"""Quality SLOs against human labels, for people and programs: each SLO's good/bad
classification compared with the labels' (`collector.slo.trust`: κ, sensitivity,
specificity, positive = bad), as a table and as JSON, from a dataset's labels
(`ragpulse evaluate`) or from the stored ones (`ragpulse slo trust`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from collector.settings import SloSpec
from collector.slo.trust import NOT_LABELLED, SloTrust
from evaluators.labels import LABEL_SCALES
from evaluators.outcome import Score
from evaluators.runner import EvaluationResult
from evaluators.threshold_agreement import threshold_agreement
from ragpulse.offline_eval.render import fmt, layout

HEADING = (
    "SLO classification against human labels (positive = bad: sensitivity = the bad traces "
    "the SLI counts bad, specificity = the good ones it counts good)"
)


def compare_slos_with_labels(
    result: EvaluationResult,
    labels: Sequence[Mapping[str, float]],
    specs: Sequence[SloSpec],
    seed: int = 0,
) -> list[SloTrust]:
    """Each SLO on an evaluated judge metric with labelled, scored samples."""
    out: list[SloTrust] = []
    for spec in specs:
        outcomes = result.per_sample.get(spec.metric)
        scale = LABEL_SCALES.get(spec.metric)
        if spec.kind in NOT_LABELLED or outcomes is None or scale is None:
            continue
        pairs = [
            (o.value, lab[spec.metric])
            for o, lab in zip(outcomes, labels, strict=True)
            if isinstance(o, Score) and spec.metric in lab
        ]
        if not pairs:
            continue
        judge = np.array([j for j, _ in pairs], dtype=np.float64)
        human = scale.label_on_metric_scale(np.array([h for _, h in pairs], dtype=np.float64))
        found = threshold_agreement(judge, human, spec.op, spec.threshold, seed=seed)
        out.append(SloTrust(spec.name, spec.metric, found))
    return out


def render_slo_trust(trusts: Sequence[SloTrust]) -> str:
    """slo, metric, statistic, value, 95% CI, n and the bad shares; under the table, the
    SLOs without a comparison and why."""
    rows: list[tuple[str, ...]] = [("slo", "metric", "statistic", "value", "95% CI", "n")]
    notes = []
    for trust in trusts:
        found = trust.found
        if found is None:
            notes.append(f"{trust.slo} ({trust.metric}): no comparison: {trust.reason}")
            continue
        for stat, d in found.agreement.to_dict().items():
            ci = f"undefined: {d['undefined']}" if "undefined" in d else _ci(d)
            rows.append((trust.slo, trust.metric, stat, fmt(d["value"]), ci, str(d["n"])))
        n = str(found.agreement.n)
        rows.append((trust.slo, trust.metric, "bad share, SLI", fmt(found.bad_share_sli), "-", n))
        rows.append(
            (trust.slo, trust.metric, "bad share, humans", fmt(found.bad_share_human), "-", n)
        )
    table = layout(rows, left=3) if len(rows) > 1 else ""
    return "\n".join(part for part in (table, *notes) if part)


def slo_trust_dict(trusts: Sequence[SloTrust]) -> dict[str, Any]:
    """{slo: {metric, n, stats, bad_share_sli, bad_share_human}} or {slo: {metric,
    undefined: why}}."""
    out: dict[str, Any] = {}
    for trust in trusts:
        found = trust.found
        if found is None:
            out[trust.slo] = {"metric": trust.metric, "undefined": trust.reason}
            continue
        out[trust.slo] = {
            "metric": trust.metric,
            "n": found.agreement.n,
            "stats": found.agreement.to_dict(),
            "bad_share_sli": found.bad_share_sli,
            "bad_share_human": found.bad_share_human,
        }
    return out


def _ci(d: Mapping[str, Any]) -> str:
    lo, hi = d.get("ci_lower"), d.get("ci_upper")
    return f"[{fmt(lo)}, {fmt(hi)}]" if lo is not None and hi is not None else "-"
