"""Tier Judge: live agreement of the LLM judge with human labels, and corrected means.

Every run, per window (agreement is meaningful mostly on 24h / 7d, where labels add up)
and per judge metric that takes labels (`evaluators.labels.LABEL_SCALES`):

1. the judge's per-trace outcomes are those `rag_quality` stored in `job_outcomes` (a
   number; errors and skips are not scored) for the traces whose timestamp is in the window;
   the judged outcome of a conversation (`session_completeness`, `session_frustration`) is
   the one `sessions` stored on the session's first turn, at the session's start;
2. the human label of a trace is taken from `human_labels` (one row per labeler); a
   conversation's label is the one on its first turn's trace, under the session metric's
   name (`ragpulse labels` takes it like any other). Several
   labelers of one trace are combined into one label: the mean on a continuous scale; on
   a binary or ordinal scale the median, a tie between two grades resolved to the LOWER
   grade (a half-way median is no grade; the lower one is the cautious reading, and a
   majority, when there is one, is the median);
3. which judge model scored a trace is read from `judgments`: the models of the successful
   calls for that trace and metric (sorted, joined with ","; the trace's value is the
   judge's mean over them), else the configured models. Agreement is computed per
   (metric, model) over the labelled, scored pairs (`evaluators.agreement.agreement`,
   the scale's statistics, bootstrap 95% intervals and n; undefined statistics are left
   out, never NaN);
4. the PPI corrected mean (`evaluators.correction.ppi_mean`) of the metric: the judge's
   values over every scored trace in the window, rectified by the labelled ones (all
   models together: it corrects the value `ragpulse_metric_value` shows).

5. for every quality SLO on the metric (`slo_rules` option: its rule `op threshold`), the
   SLI's good/bad classification against the labels' (`evaluators.threshold_agreement`:
   κ, sensitivity, specificity, positive = bad), per model like the agreement, as stats
   `slo:<name>:cohen_kappa`, `slo:<name>:sensitivity`, `slo:<name>:specificity` (so the
   agreement alert's anchored `stat=~"cohen_kappa|..."` does not read them).

Rows go to `metric_results` like every job's, with windows `agreement:<window>` (group
key model + stat, `group_labels` {model, stat}) and `corrected:<window>`, plus one
`agreement:min` row carrying the alert's settings (`judge.min_agreement` as the value,
`judge.min_agreement_pairs` as n); `exporters.families` turns them into the
`ragpulse_judge_agreement*` and `ragpulse_metric_corrected*` families.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from types import MappingProxyType

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from collector.jobs.run.definition import JobDefinition, JobEnvironment, JobReport, SloRule
from collector.jobs.run.engine import IncrementalJob
from collector.jobs.run.job_state import load_state, record_run
from collector.jobs.windows.aggregate import WindowAggregate
from collector.jobs.windows.window import OVERALL, Group, Window
from collector.settings import Settings
from collector.store.models import HumanLabel, JobOutcome, Judgment
from evaluators.aggregate import Aggregate
from evaluators.agreement import Stat, agreement
from evaluators.correction import Corrected, ppi_mean
from evaluators.judge_quality import OK
from evaluators.labels import LABEL_SCALES, LabelScale
from evaluators.threshold_agreement import threshold_agreement

NAME = "judge_agreement"
METRICS: tuple[str, ...] = ()
"""No `ragpulse_metric_value` series of its own: its families are the agreement and
corrected ones (`exporters.families`), drawn in the operations dashboard's judge rows."""
SOURCE_JOBS = ("rag_quality", "sessions")
"""The jobs storing judge outcomes: the per-trace judge metrics, and the judged session
metrics (`session_completeness`, `session_frustration`) on each session's first turn."""
AGREEMENT_PREFIX = "agreement:"
CORRECTED_PREFIX = "corrected:"
SLO_STAT_PREFIX = "slo:"
"""The stats of an SLO's classification against the labels: `slo:<name>:cohen_kappa`, ..."""
THRESHOLD_WINDOW = "agreement:min"
"""The row carrying `judge.min_agreement` (value) and `judge.min_agreement_pairs` (n)."""
UNKNOWN_MODEL = "unknown"


def definition(settings: Settings) -> JobDefinition:
    return JobDefinition(
        name=NAME,
        metrics=METRICS,
        description="agreement of the LLM judge with human labels, and PPI-corrected means",
        factory=JudgeAgreementJob,
    )


def combine_labels(values: Sequence[float], scale: LabelScale) -> float:
    """One label of a trace from its labelers' (see the module docstring, step 2)."""
    arr = np.asarray(values, dtype=np.float64)
    if scale.kind == "continuous":
        return float(arr.mean())
    return float(np.floor(np.median(arr)))


class JudgeAgreementJob(IncrementalJob):
    """Not a per-trace job: it reads `job_outcomes`, `human_labels` and `judgments`."""

    def __init__(self, definition: JobDefinition, env: JobEnvironment) -> None:
        self.definition = definition
        self.env = env
        self.name = definition.name
        self._longest = max(w.seconds for w in env.windows)
        self.min_agreement = env.options.judge.min_agreement
        self.min_pairs = env.options.judge.min_agreement_pairs
        self.slo_rules: dict[str, list[SloRule]] = defaultdict(list)
        for rule in env.options.slo_rules:
            self.slo_rules[rule[1]].append(rule)

    def run(self, now: datetime | None = None) -> JobReport:
        started = time.perf_counter()
        now = now or datetime.now(UTC)
        with self.env.session_factory() as session:
            points, labelled = self._points(session, now)
            written = self._write(session, now, points)
            message = f"{labelled} labelled traces in the longest window"
            record_run(session, load_state(session, self.name), now, message, started=started)
        return JobReport(self.name, "ok", 0, written, time.perf_counter() - started)

    def _configured_model(self) -> str:
        models = getattr(self.env.judge, "models", ())
        return ",".join(models) or UNKNOWN_MODEL

    def _points(
        self, session: Session, now: datetime
    ) -> tuple[list[tuple[Window, WindowAggregate]], int]:
        since = now - timedelta(seconds=self._longest)
        in_window = (
            select(JobOutcome.trace_id)
            .where(JobOutcome.job.in_(SOURCE_JOBS), JobOutcome.ts >= since)
            .scalar_subquery()
        )
        outcomes = session.execute(
            select(JobOutcome.trace_id, JobOutcome.ts, JobOutcome.outcomes).where(
                JobOutcome.job.in_(SOURCE_JOBS), JobOutcome.ts >= since
            )
        ).all()
        raw: dict[tuple[str, str], list[float]] = defaultdict(list)
        for trace, metric, value in session.execute(
            select(HumanLabel.trace_id, HumanLabel.metric, HumanLabel.value).where(
                HumanLabel.trace_id.in_(in_window), HumanLabel.metric.in_(list(LABEL_SCALES))
            )
        ):
            raw[(trace, metric)].append(float(value))
        labels = {key: combine_labels(values, LABEL_SCALES[key[1]]) for key, values in raw.items()}
        models = self._models(session, {trace for trace, _metric in labels})
        fallback = self._configured_model()
        threshold = Aggregate("", self.min_agreement, self.min_pairs)
        points = [(Window(THRESHOLD_WINDOW, 0.0), WindowAggregate(OVERALL, threshold))]
        for window in self.env.windows:
            start = window.start(now)
            rows = [(t, _aware(ts), o) for t, ts, o in outcomes if _aware(ts) >= start]
            for metric, scale in LABEL_SCALES.items():
                scored = [(t, _number(o.get(metric))) for t, _ts, o in rows]
                values = {t: v for t, v in scored if v is not None}
                if not values:
                    continue
                pairs = [
                    (t, v, labels[(t, metric)]) for t, v in values.items() if (t, metric) in labels
                ]
                points += self._corrected(window, metric, scale, list(values.values()), pairs)
                by_model: dict[str, list[tuple[float, float]]] = defaultdict(list)
                for trace, judge, human in pairs:
                    by_model[models.get((trace, metric), fallback)].append((judge, human))
                for model, own in sorted(by_model.items()):
                    points += _agreement(window, metric, scale, model, own)
                    for slo, _m, op, cut in self.slo_rules.get(metric, ()):
                        points += _slo_agreement(window, metric, scale, model, own, slo, op, cut)
        return points, len({t for t, _m in labels})

    def _models(self, session: Session, traces: Iterable[str]) -> dict[tuple[str, str], str]:
        """(trace, metric) -> the models of its successful judge calls, sorted and joined."""
        found: dict[tuple[str, str], set[str]] = defaultdict(set)
        chosen = list(traces)
        for start in range(0, len(chosen), 500):
            for trace, metric, model in session.execute(
                select(Judgment.trace_id, Judgment.metric, Judgment.model).where(
                    Judgment.status == OK, Judgment.trace_id.in_(chosen[start : start + 500])
                )
            ):
                if trace is not None:
                    found[(trace, metric)].add(model)
        return {key: ",".join(sorted(names)) for key, names in found.items()}

    def _corrected(
        self,
        window: Window,
        metric: str,
        scale: LabelScale,
        judge_all: list[float],
        pairs: list[tuple[str, float, float]],
    ) -> list[tuple[Window, WindowAggregate]]:
        judge = np.array([j for _t, j, _h in pairs], dtype=np.float64)
        human = scale.label_on_metric_scale(np.array([h for _t, _j, h in pairs], dtype=np.float64))
        found = ppi_mean(judge_all, judge, human, bounds=scale.metric_bounds)
        name = Window(CORRECTED_PREFIX + window.name, window.seconds)
        if isinstance(found, Corrected):
            agg = Aggregate(metric, found.value, found.n_labelled, found.ci_lower, found.ci_upper)
        else:
            agg = Aggregate(metric, None, len(pairs), skip_reasons={found.reason: 0})
        return [(name, WindowAggregate(OVERALL, agg))]


def _agreement(
    window: Window, metric: str, scale: LabelScale, model: str, pairs: list[tuple[float, float]]
) -> list[tuple[Window, WindowAggregate]]:
    judge = scale.judge_on_label_scale(np.array([j for j, _h in pairs], dtype=np.float64))
    human = np.array([h for _j, h in pairs], dtype=np.float64)
    found = agreement(judge, human, scale.kind)
    name = Window(AGREEMENT_PREFIX + window.name, window.seconds)
    out: list[tuple[Window, WindowAggregate]] = []
    for stat, value in found.stats.items():
        group = Group(f"{model}|{stat}", MappingProxyType({"model": model, "stat": stat}))
        if isinstance(value, Stat):
            agg = Aggregate(metric, value.value, value.n, value.ci_lower, value.ci_upper)
        else:
            agg = Aggregate(metric, None, found.n, skip_reasons={value.reason: 0})
        out.append((name, WindowAggregate(group, agg)))
    return out


def _slo_agreement(
    window: Window,
    metric: str,
    scale: LabelScale,
    model: str,
    pairs: list[tuple[float, float]],
    slo: str,
    op: str,
    threshold: float,
) -> list[tuple[Window, WindowAggregate]]:
    """The SLO's classification of the judge's values against the labels' (step 5)."""
    judge = np.array([j for j, _h in pairs], dtype=np.float64)
    human = scale.label_on_metric_scale(np.array([h for _j, h in pairs], dtype=np.float64))
    found = threshold_agreement(judge, human, op, threshold).agreement
    name = Window(AGREEMENT_PREFIX + window.name, window.seconds)
    out: list[tuple[Window, WindowAggregate]] = []
    for stat, value in found.stats.items():
        label = f"{SLO_STAT_PREFIX}{slo}:{stat}"
        group = Group(f"{model}|{label}", MappingProxyType({"model": model, "stat": label}))
        if isinstance(value, Stat):
            agg = Aggregate(metric, value.value, value.n, value.ci_lower, value.ci_upper)
        else:
            agg = Aggregate(metric, None, found.n, skip_reasons={value.reason: 0})
        out.append((name, WindowAggregate(group, agg)))
    return out


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _aware(ts: datetime) -> datetime:
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)
