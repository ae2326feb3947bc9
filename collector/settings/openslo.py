"""Reading SLOs from OpenSLO v1 YAML (https://github.com/OpenSLO/OpenSLO), the subset that
fits ragpulse's per-trace events.

Kinds read: `SLO` (inline `indicator` or `indicatorRef`), `SLI`, `AlertPolicy` (inline in
the SLO's `alertPolicies` or by `alertPolicyRef`) and `AlertCondition` (inline or by
`conditionRef`); other kinds (Service, DataSource, AlertNotificationTarget) are ignored.
What must hold:
- the indicator is a `ratioMetric` whose `good` and `total` sources have
  `metricSource.type: ragpulse`; `good.metricSource.spec` is `{metric, op, threshold}` (a
  threshold SLI) or `{metric, succeeded: true}` (the metric's evaluation succeeded), and
  `total.metricSource.spec` names the same metric; or, for the SLIs that are no metric
  against a threshold, `sli` names the kind in both: `{sli: latency, limit: 2s}` (good:
  the trace's latency within the limit; total `{sli: latency}`: every trace with a
  latency) or `{sli: agreement, agrees: true}` (good: the production judge's decision
  agrees with `judge_label`; total `{sli: agreement}`: every labelled trace);
- `budgetingMethod: Occurrences`, one rolling `timeWindow`, one objective (`target`, or
  `targetPercent`);
- alert conditions are `kind: burnrate` with `op: gt|gte`, `threshold` (the burn-rate
  factor) and `lookbackWindow` (the long window). OpenSLO has no short window: it is a
  twelfth of the long one, the workbook's ratio (1h/5m, 6h/30m, 1d/2h, 3d/6h). The
  condition's `severity` is `page` or `ticket` (`critical` and `warning`, the rule labels
  they become, are read as the same; `severity.py`). No `alertPolicies`: the workbook's
  four alerts.
Errors are `SloSpecError`, one line naming the document and the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from collector.settings.durations import parse_duration
from collector.settings.severity import UnknownSeverityError, rule_severity
from collector.settings.slo_spec import (
    DEFAULT_ALERTS,
    KIND_METRICS,
    BurnAlert,
    SloSpec,
    SloSpecError,
    spec_word,
    validate_all,
)

API_VERSION = "openslo/v1"
SOURCE_TYPE = "ragpulse"


def load_openslo(path: Path) -> tuple[SloSpec, ...]:
    """The SLOs of an OpenSLO file, validated."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SloSpecError(f"cannot read OpenSLO file {path}: {exc.strerror}") from None
    return parse_openslo(text, str(path))


def parse_openslo(text: str, origin: str = "<openslo>") -> tuple[SloSpec, ...]:
    """The SLOs of OpenSLO YAML text (one or more documents), validated."""
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise SloSpecError(f"{origin}: not YAML ({str(exc).splitlines()[0]})") from None
    by_kind: dict[str, dict[str, Mapping[str, Any]]] = {}
    for doc in docs:
        if not isinstance(doc, Mapping) or doc.get("apiVersion") != API_VERSION:
            raise SloSpecError(f"{origin}: every document needs apiVersion: {API_VERSION}")
        name = _str(doc, ("metadata", "name"), f"{origin}: {doc.get('kind')}")
        by_kind.setdefault(str(doc.get("kind")), {})[name] = doc
    slos = by_kind.get("SLO", {})
    if not slos:
        raise SloSpecError(f"{origin}: no document of kind SLO")
    return validate_all(tuple(_slo(name, doc, by_kind) for name, doc in slos.items()))


def _slo(
    name: str, doc: Mapping[str, Any], docs: dict[str, dict[str, Mapping[str, Any]]]
) -> SloSpec:
    where = f"SLO {name!r}"
    spec = _map(doc, ("spec",), where)
    if spec.get("budgetingMethod") != "Occurrences":
        raise SloSpecError(f"{where}: budgetingMethod must be Occurrences (events, not time)")
    windows = spec.get("timeWindow")
    if not isinstance(windows, list) or len(windows) != 1 or not isinstance(windows[0], Mapping):
        raise SloSpecError(f"{where}: timeWindow must hold one window")
    if windows[0].get("isRolling") is not True:
        raise SloSpecError(f"{where}: timeWindow must be rolling (isRolling: true)")
    window = str(windows[0].get("duration", ""))
    objectives = spec.get("objectives")
    if not isinstance(objectives, list) or len(objectives) != 1:
        raise SloSpecError(f"{where}: objectives must hold one objective")
    target = _target(where, objectives[0])
    indicator = _indicator(where, spec, docs)
    ratio = _map(indicator, ("spec", "ratioMetric"), f"{where}: indicator")
    good = _source(where, ratio, "good")
    total = _source(where, ratio, "total")
    if "sli" in good or "sli" in total:
        return _kind_slo(name, where, spec, good, total, target, window, docs)
    metric = str(good.get("metric", ""))
    if str(total.get("metric", "")) != metric:
        raise SloSpecError(f"{where}: good and total must name the same metric")
    fields: dict[str, Any] = {}
    if good.get("succeeded") is True:
        fields["kind"] = "success"
    elif "op" in good and "threshold" in good:
        fields["op"] = str(good["op"])
        fields["threshold"] = _number(where, "threshold", good["threshold"])
    else:
        raise SloSpecError(f"{where}: good needs op and threshold, or succeeded: true")
    return SloSpec(
        name=name,
        metric=metric,
        target=target,
        window=window,
        description=str(spec.get("description", "")),
        alerts=_alerts(where, spec.get("alertPolicies"), docs),
        **fields,
    )


def _kind_slo(
    name: str,
    where: str,
    spec: Mapping[str, Any],
    good: Mapping[str, Any],
    total: Mapping[str, Any],
    target: float,
    window: str,
    docs: dict[str, dict[str, Mapping[str, Any]]],
) -> SloSpec:
    """A `latency` or `agreement` SLO (`sli` in the sources)."""
    kind = str(good.get("sli", ""))
    if kind not in KIND_METRICS or str(total.get("sli", "")) != kind:
        raise SloSpecError(
            f"{where}: good and total need the same sli, one of {', '.join(KIND_METRICS)}"
        )
    if "metric" in good or "metric" in total:
        raise SloSpecError(f"{where}: an sli source names no metric (sli {kind} implies it)")
    limit: Any = None
    if kind == "latency":
        limit = good.get("limit")
        if limit is None:
            raise SloSpecError(f"{where}: good needs limit (e.g. 2s or 2000 for ms)")
        if isinstance(limit, bool) or not isinstance(limit, int | float | str):
            raise SloSpecError(f"{where}: limit {limit!r} is not a duration or number of ms")
    elif good.get("agrees") is not True:
        raise SloSpecError(f"{where}: good needs agrees: true (sli agreement)")
    return SloSpec(
        name=name,
        metric="",
        target=target,
        window=window,
        kind="latency" if kind == "latency" else "agreement",
        description=str(spec.get("description", "")),
        alerts=_alerts(where, spec.get("alertPolicies"), docs),
        limit=limit,
    )


def _target(where: str, objective: Any) -> float:
    if not isinstance(objective, Mapping):
        raise SloSpecError(f"{where}: an objective must be a mapping")
    if "target" in objective:
        return _number(where, "target", objective["target"])
    if "targetPercent" in objective:
        return _number(where, "targetPercent", objective["targetPercent"]) / 100.0
    raise SloSpecError(f"{where}: the objective needs target or targetPercent")


def _indicator(
    where: str, spec: Mapping[str, Any], docs: dict[str, dict[str, Mapping[str, Any]]]
) -> Mapping[str, Any]:
    if isinstance(spec.get("indicator"), Mapping):
        return dict(spec["indicator"])
    ref = spec.get("indicatorRef")
    found = docs.get("SLI", {}).get(str(ref)) if ref is not None else None
    if found is None:
        raise SloSpecError(f"{where}: needs an inline indicator or an indicatorRef to an SLI")
    return found


def _source(where: str, ratio: Mapping[str, Any], part: str) -> Mapping[str, Any]:
    source = _map(ratio, (part, "metricSource"), f"{where}: ratioMetric")
    if source.get("type") != SOURCE_TYPE:
        raise SloSpecError(f"{where}: {part}.metricSource.type must be {SOURCE_TYPE}")
    return _map(source, ("spec",), f"{where}: {part}.metricSource")


def _alerts(
    where: str, policies: Any, docs: dict[str, dict[str, Mapping[str, Any]]]
) -> tuple[BurnAlert, ...]:
    if policies is None:
        return DEFAULT_ALERTS
    if not isinstance(policies, list):
        raise SloSpecError(f"{where}: alertPolicies must be a list")
    out = []
    for item in policies:
        policy = _ref(where, item, "alertPolicyRef", "AlertPolicy", docs)
        conditions = _map(policy, ("spec",), f"{where}: alert policy").get("conditions")
        if not isinstance(conditions, list) or not conditions:
            raise SloSpecError(f"{where}: an alert policy needs conditions")
        for entry in conditions:
            out.append(
                _condition(where, _ref(where, entry, "conditionRef", "AlertCondition", docs))
            )
    return tuple(out)


def _ref(
    where: str,
    item: Any,
    ref_key: str,
    kind: str,
    docs: dict[str, dict[str, Mapping[str, Any]]],
) -> Mapping[str, Any]:
    if not isinstance(item, Mapping):
        raise SloSpecError(f"{where}: a {kind} entry must be a mapping")
    if ref_key in item:
        found = docs.get(kind, {}).get(str(item[ref_key]))
        if found is None:
            raise SloSpecError(f"{where}: {ref_key} {item[ref_key]!r} names no {kind}")
        return found
    return item


def _condition(where: str, doc: Mapping[str, Any]) -> BurnAlert:
    spec = _map(doc, ("spec",), f"{where}: alert condition")
    cond = _map(spec, ("condition",), f"{where}: alert condition")
    if cond.get("kind") != "burnrate" or cond.get("op") not in ("gt", "gte"):
        raise SloSpecError(f"{where}: alert conditions must be kind burnrate with op gt or gte")
    severity = str(spec.get("severity", ""))
    try:
        rule_severity(severity)
    except UnknownSeverityError as exc:
        raise SloSpecError(f"{where}: alert {exc}") from None
    long_window = str(cond.get("lookbackWindow", ""))
    try:
        long_s = parse_duration(long_window)
    except ValueError:
        raise SloSpecError(f"{where}: lookbackWindow {long_window!r} is not a duration") from None
    return BurnAlert(
        severity=spec_word(severity),
        factor=_number(where, "burn rate threshold", cond.get("threshold")),
        long_window=long_window,
        short_window=_twelfth(long_s),
    )


def _twelfth(seconds: float) -> str:
    """A twelfth of a window, in whole minutes (at least one), in the largest unit that
    divides it (`2h`, not `120m`)."""
    minutes = max(1, round(seconds / 12 / 60))
    if minutes % 1440 == 0:
        return f"{minutes // 1440}d"
    return f"{minutes // 60}h" if minutes % 60 == 0 else f"{minutes}m"


def _map(doc: Mapping[str, Any], path: tuple[str, ...], where: str) -> Mapping[str, Any]:
    node: Any = doc
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    if not isinstance(node, Mapping):
        raise SloSpecError(f"{where}: {'.'.join(path)} is missing or not a mapping")
    return node


def _str(doc: Mapping[str, Any], path: tuple[str, ...], where: str) -> str:
    parent = _map(doc, path[:-1], where)
    value = parent.get(path[-1])
    if not isinstance(value, str) or not value:
        raise SloSpecError(f"{where}: {'.'.join(path)} must be a non-empty string")
    return value


def _number(where: str, field: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SloSpecError(f"{where}: {field} must be a number (got {value!r})")
    return float(value)
