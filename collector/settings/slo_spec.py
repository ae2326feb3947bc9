"""A quality SLO: which per-trace event is good, the objective, the window, the alerts.

An SLI event is one trace's outcome of one metric, classified good or bad:
- `threshold`: the metric's score against a threshold (`faithfulness >= 0.7`,
  `hit_rate@5 == 1`, `answer_relevance >= 0.5`);
- `success`: the metric was computed (good) or its evaluation failed (bad), e.g. a judge
  call that succeeded;
- `latency`: the trace's end-to-end latency within `limit` (a duration such as `2s` or
  `1500ms`, or a number of milliseconds): good when `latency_ms <= limit`. The metric is
  `latency_ms` (`evaluators/latency.py`), scored on every trace (not sampled);
- `agreement`: the production judge's show/hide decision agrees with the trace's
  `judge_label`: the metric `judge_decision_correct` (1 or 0), every labelled trace an
  event (`evaluators/classification.py`).
`latency` and `agreement` name their metric themselves (`KIND_METRICS`) and become, once
validated, threshold SLIs on it (`latency_ms <= limit`, `judge_decision_correct == 1`), so
events, rules and dashboard treat every kind alike.
A trace for which the metric was skipped (no reference, no label yet) is no event. Only
metrics with per-trace outcomes make events (not the production judge's confusion-matrix
metrics such as `judge_accuracy`, computed over sets of traces: `agreement` is its
per-trace form).

Alerts follow the Google SRE Workbook ("Alerting on SLOs", multi-window multi-burn-rate):
each `BurnAlert` fires when the error ratio over its long window and its short window both
exceed `factor` times the error budget (1 - target); its `severity` is the workbook's word,
`page` or `ticket`, written into the rules as `critical` or `warning` (`severity.py`).
`DEFAULT_ALERTS` are the workbook's
(those that can fire: a 90% SLO cannot burn 14.4x, an error ratio of 1.44; declared alerts
that cannot are errors).
Every check fails with `SloSpecError`, one line naming the SLO and the offending field.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Literal

from collector.settings.durations import parse_duration
from collector.settings.severity import (
    CRITICAL,
    SPEC_WORDS,
    UnknownSeverityError,
    rule_severity,
)
from evaluators.errors import UnknownMetricError
from evaluators.registry import JobMetric, resolve
from evaluators.registry import declared as known_metrics
from evaluators.rule import OPS, is_good

Kind = Literal["threshold", "success", "latency", "agreement"]
KINDS = ("threshold", "success", "latency", "agreement")
KIND_METRICS = {"latency": "latency_ms", "agreement": "judge_decision_correct"}
"""The metric of the kinds that imply theirs."""
Severity = Literal["page", "ticket"]
"""An SLO's words for the two severities (OpenSLO's, the SRE Workbook's)."""
PER_TRACE = ("per_sample", "async_per_sample")
"""Metric kinds with one outcome per trace: the only ones an SLI event can come from."""
NAME = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")


class SloSpecError(ValueError):
    """An SLO declaration that cannot be used; the message is one line."""


@dataclass(frozen=True, slots=True)
class BurnAlert:
    """Fires when both windows burn the budget `factor` times faster than sustainable."""

    severity: Severity
    factor: float
    long_window: str
    short_window: str


DEFAULT_ALERTS = (
    BurnAlert("page", 14.4, "1h", "5m"),
    BurnAlert("page", 6.0, "6h", "30m"),
    BurnAlert("ticket", 3.0, "1d", "2h"),
    BurnAlert("ticket", 1.0, "3d", "6h"),
)
"""The workbook's table: 2% of a 30-day budget in 1 h, 5% in 6 h, 10% in 1 d and 3 d."""


@dataclass(frozen=True, slots=True)
class SloSpec:
    """One SLO, validated (`validate`)."""

    name: str
    metric: str
    target: float
    window: str
    kind: Kind = "threshold"
    op: str = ">="
    threshold: float = 0.0
    description: str = ""
    alerts: tuple[BurnAlert, ...] = DEFAULT_ALERTS
    limit: float | str | None = None
    """`latency` SLOs: the latency limit as declared (`2s`, `1500ms`, or milliseconds);
    validated into `threshold` (ms)."""

    @property
    def budget(self) -> float:
        """The error budget: the share of bad events the objective allows."""
        return 1.0 - self.target

    @property
    def window_s(self) -> float:
        return parse_duration(self.window)

    def is_good(self, value: float) -> bool:
        """A score's classification (`value op threshold`; `==` within 1e-9)."""
        return is_good(value, self.op, self.threshold)


def validate(spec: SloSpec) -> SloSpec:
    """`spec` with its metric in canonical form, or `SloSpecError` naming what is wrong."""
    where = f"slo {spec.name!r}"
    if not NAME.match(spec.name):
        raise SloSpecError(f"{where}: the name must be lower-case letters, digits, - or _")
    if spec.kind not in KINDS:
        raise SloSpecError(f"{where}: kind {spec.kind!r} must be one of {', '.join(KINDS)}")
    if spec.kind in KIND_METRICS:
        spec = _implied(where, spec)
    declared = known_metrics().get(spec.metric.strip())
    if isinstance(declared, JobMetric) and declared.per_trace:
        # a job's own metric stored per trace (a session's outcome on its first turn)
        return _checked(where, replace(spec, metric=declared.family))
    try:
        resolved = resolve(spec.metric)
    except UnknownMetricError as exc:
        raise SloSpecError(f"{where}: {exc}") from None
    metric = resolved.name
    if resolved.spec.kind not in PER_TRACE:
        raise SloSpecError(
            f"{where}: metric {metric!r} is computed over sets of traces: no per-trace "
            "event to count"
        )
    return _checked(where, replace(spec, metric=metric))


def _checked(where: str, spec: SloSpec) -> SloSpec:
    """`spec` (its metric known to have per-trace events) with its target, window, rule
    and alerts checked."""
    if not 0.0 < spec.target < 1.0:
        raise SloSpecError(f"{where}: target {spec.target} must lie in (0, 1)")
    _duration(where, "window", spec.window)
    if spec.kind == "threshold":
        if spec.op not in OPS:
            raise SloSpecError(f"{where}: op {spec.op!r} must be one of {', '.join(OPS)}")
        if not math.isfinite(spec.threshold):
            raise SloSpecError(f"{where}: threshold must be a finite number")
    alerts = spec.alerts
    if alerts == DEFAULT_ALERTS:
        # a 90% SLO cannot burn 14.4x (an error ratio of 1.44): keep the defaults that can
        alerts = tuple(a for a in alerts if a.factor * spec.budget < 1.0)
    if not alerts:
        raise SloSpecError(f"{where}: at least one burn-rate alert is needed")
    for alert in alerts:
        long_s = _duration(where, "lookback window", alert.long_window)
        short_s = _duration(where, "short window", alert.short_window)
        try:
            rule_severity(alert.severity)
        except UnknownSeverityError as exc:
            raise SloSpecError(f"{where}: {exc}") from None
        if not alert.factor > 0:
            raise SloSpecError(f"{where}: burn rate {alert.factor} must be positive")
        if short_s >= long_s or long_s > spec.window_s:
            raise SloSpecError(
                f"{where}: alert windows {alert.short_window}/{alert.long_window} must be "
                f"short < long <= the SLO window {spec.window}"
            )
        if alert.factor * spec.budget >= 1.0:
            raise SloSpecError(
                f"{where}: burn rate {alert.factor} x budget {spec.budget:g} reaches an "
                "error ratio of 1: the alert could never fire"
            )
    alerts = tuple(replace(a, severity=spec_word(a.severity)) for a in alerts)
    return replace(spec, alerts=alerts)


def spec_word(severity: str) -> Severity:
    """The SLO's word for a known severity: `critical` (or `page`) -> page, `warning` (or
    `ticket`) -> ticket."""
    return "page" if SPEC_WORDS[severity.strip().lower()] == CRITICAL else "ticket"


def validate_all(specs: tuple[SloSpec, ...]) -> tuple[SloSpec, ...]:
    """Every spec validated, names unique."""
    seen: set[str] = set()
    out = []
    for spec in specs:
        if spec.name in seen:
            raise SloSpecError(f"slo {spec.name!r} is declared twice")
        seen.add(spec.name)
        out.append(validate(spec))
    return tuple(out)


def _implied(where: str, spec: SloSpec) -> SloSpec:
    """A `latency` or `agreement` SLO as the threshold SLI on its own metric."""
    metric = KIND_METRICS[spec.kind]
    if spec.metric not in ("", metric):
        raise SloSpecError(
            f"{where}: a {spec.kind} SLO measures {metric}, not {spec.metric!r} (leave metric out)"
        )
    if spec.kind == "agreement":
        if spec.limit is not None:
            raise SloSpecError(f"{where}: an agreement SLO takes no limit")
        return replace(spec, metric=metric, op="==", threshold=1.0)
    return replace(spec, metric=metric, op="<=", threshold=limit_ms(where, spec.limit))


def limit_ms(where: str, limit: float | str | None) -> float:
    """A latency limit in milliseconds: a positive number (ms) or a duration (`2s`,
    `1500ms`, `1m`)."""
    problem = f"{where}: limit {limit!r} is not a positive duration (2s, 1500ms) or number of ms"
    if limit is None:
        raise SloSpecError(f"{where}: a latency SLO needs a limit (e.g. 2s or 2000 for ms)")
    if isinstance(limit, bool):
        raise SloSpecError(problem)
    if isinstance(limit, int | float):
        value = float(limit)
    elif limit.endswith("ms") and limit[:-2].isdigit():
        value = float(int(limit[:-2]))
    else:
        try:
            value = parse_duration(limit) * 1000.0
        except ValueError:
            raise SloSpecError(problem) from None
    if not (math.isfinite(value) and value > 0):
        raise SloSpecError(problem)
    return value


def _duration(where: str, field: str, text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError:
        raise SloSpecError(
            f"{where}: {field} {text!r} is not a duration like 5m, 1h, 28d"
        ) from None
