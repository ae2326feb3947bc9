"""How far to trust a quality SLO's budget: its SLI's good/bad classification against the
human labels of the same traces (issue 32, item 5).

For an SLO whose metric takes human labels (`evaluators.labels.LABEL_SCALES`: the judge
metrics), the pairs are the traces of the look-back whose stored outcome of the metric is a
score (`job_outcomes` of the jobs storing it) and that humans labelled (`human_labels`,
several labelers of a trace combined as the judge agreement job combines them); the label
on the metric's scale. Both are classified by the SLO's rule and compared:
`evaluators.threshold_agreement` (Cohen's κ, sensitivity and specificity, positive = bad,
bootstrap 95% intervals). The other SLIs have no labels to compare with: a latency is
measured, not judged; an agreement SLO is the comparison with labels itself; a success SLO
counts failed calls.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from collector.jobs.catalog.judge_agreement import combine_labels
from collector.settings.slo_spec import SloSpec
from collector.store.models import HumanLabel, JobOutcome
from evaluators.labels import LABEL_SCALES
from evaluators.threshold_agreement import ThresholdAgreement, threshold_agreement

NOT_LABELLED = {
    "latency": "a latency is measured, not judged: no human labels to compare",
    "agreement": "the SLI is the production judge's agreement with the labels itself",
    "success": "a judge call that succeeded is no judgement to compare with labels",
}


@dataclass(frozen=True)
class SloTrust:
    """One SLO's comparison with the human labels, or why there is none."""

    slo: str
    metric: str
    found: ThresholdAgreement | None
    reason: str = ""


def labelled_pairs(
    session: Session, metric: str, jobs: Sequence[str], since: datetime
) -> tuple[np.ndarray, np.ndarray]:
    """(judge values, human labels on the metric's scale) of the traces since `since`
    (trace time) that `jobs` scored and humans labelled, in trace-id order."""
    scale = LABEL_SCALES[metric]
    scored: dict[str, float] = {}
    for trace_id, outcomes in session.execute(
        select(JobOutcome.trace_id, JobOutcome.outcomes).where(
            JobOutcome.job.in_(list(jobs)), JobOutcome.ts >= since
        )
    ):
        value = (outcomes or {}).get(metric)
        if isinstance(value, int | float) and not isinstance(value, bool):
            scored[trace_id] = float(value)
    raw: dict[str, list[float]] = defaultdict(list)
    chosen = sorted(scored)
    for start in range(0, len(chosen), 500):
        for trace_id, value in session.execute(
            select(HumanLabel.trace_id, HumanLabel.value).where(
                HumanLabel.metric == metric, HumanLabel.trace_id.in_(chosen[start : start + 500])
            )
        ):
            raw[trace_id].append(float(value))
    traces = sorted(raw)
    judge = np.array([scored[t] for t in traces], dtype=np.float64)
    human = np.array([combine_labels(raw[t], scale) for t in traces], dtype=np.float64)
    return judge, scale.label_on_metric_scale(human)


def slo_trust(
    session: Session,
    spec: SloSpec,
    jobs: Mapping[str, Sequence[str]],
    since: datetime,
    seed: int = 0,
) -> SloTrust:
    """The SLO's classification against the labels since `since` (`jobs`: metric -> the
    jobs storing its outcomes)."""
    if spec.kind in NOT_LABELLED:
        return SloTrust(spec.name, spec.metric, None, NOT_LABELLED[spec.kind])
    if spec.metric not in LABEL_SCALES:
        return SloTrust(spec.name, spec.metric, None, f"{spec.metric} takes no human labels")
    judge, human = labelled_pairs(session, spec.metric, jobs.get(spec.metric, ()), since)
    if judge.size == 0:
        return SloTrust(spec.name, spec.metric, None, "no labelled trace scored in the look-back")
    found = threshold_agreement(judge, human, spec.op, spec.threshold, seed=seed)
    return SloTrust(spec.name, spec.metric, found)
