"""Which alerts fire at the report's time, and which fired in its range but no longer do.

Firing is `ALERTS{alertstate="firing"}` as an instant query at the report's end: what
Prometheus's rules said at that instant, for a report ending now or in the past alike.
Not `/api/v1/alerts`, which only ever tells the present, and not `ALERTS` over the range,
where a series that ended minutes before the end still reads as firing (issue 39: four
slow burns that had resolved at 09:05 listed as firing at 09:07). An alert whose `ALERTS`
series fired in the range but not at its end is *resolved in range*: shown apart, never
counted. Its runbook text (annotations, templates expanded by Prometheus) comes from
`/api/v1/alerts` while the alert is active; otherwise from its rule (`/api/v1/rules`),
with the `$labels` of its templates filled in and any other value left out (`…`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from collector.settings.severity import is_page
from exporters.report.promapi import PromClient, QueryError
from exporters.report.verdict import FiringAlert

FIRING = 'ALERTS{alertstate="firing"}'
LOOKBACK_S = 300.0
"""Prometheus's default look-back: a range step no longer than it misses no series."""
_ACTION = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}", re.S)
_LABEL = re.compile(r"\$labels\.(\w+)")


def _key(labels: Mapping[str, Any]) -> frozenset[tuple[str, str]]:
    return frozenset((k, str(v)) for k, v in labels.items() if k not in ("__name__", "alertstate"))


def fill(template: str, labels: Mapping[str, str]) -> str:
    """A rule's annotation template with `{{ $labels.X }}` and `{{ if $labels.X }}...
    {{ else }}...{{ end }}` filled in from `labels`; other blocks (`with`, `range`, an `if`
    on anything else) left out, any other value (`$value`, a function) shown as `…`."""
    out: list[str] = []
    frames: list[list[bool]] = []  # per open block: [shown, flips at else]
    pos = 0

    def shown() -> bool:
        return all(f[0] for f in frames)

    for match in _ACTION.finditer(template):
        if shown():
            out.append(template[pos : match.start()])
        pos = match.end()
        action = match.group(1)
        head = action.split(None, 1)[0] if action else ""
        if head in ("if", "with", "range"):
            test = re.fullmatch(r"if\s+\$labels\.(\w+)", action)
            frames.append([bool(test and labels.get(test.group(1))), test is not None])
        elif head == "else" and frames:
            frames[-1][0] = frames[-1][1] and not frames[-1][0]
        elif head == "end" and frames:
            frames.pop()
        elif shown():
            label = re.fullmatch(r"\$labels\.(\w+)", action)
            out.append(labels.get(label.group(1), "") if label else "…")
    if shown():
        out.append(template[pos:])
    return "".join(out)


def _epoch(text: object) -> float | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _rule_of(rules: Iterable[dict[str, Any]], labels: Mapping[str, str]) -> dict[str, Any]:
    """The alerting rule that made an alert: its name, and its static labels all on it."""
    for rule in rules:
        static = rule.get("labels") or {}
        if rule.get("name") == labels.get("alertname") and all(
            labels.get(k) == str(v) for k, v in static.items()
        ):
            return rule
    return {}


class _Annotations:
    """The runbook text of alerts: the active ones' from `/api/v1/alerts`, the others'
    from their rules (fetched once, when first needed)."""

    def __init__(self, client: PromClient):
        self.client = client
        try:
            found = client.alerts()
        except QueryError:  # the alerts still count, without their runbook text
            found = []
        self.active = {_key(a.get("labels") or {}): a for a in found if a.get("state") == "firing"}
        self.rules: list[dict[str, Any]] | None = None

    def of(self, labels: Mapping[str, str]) -> tuple[dict[str, str], float | None]:
        """An alert's annotations and, while it is active, since when it fires."""
        found = self.active.get(_key(labels))
        if found is not None:
            notes = {str(k): str(v) for k, v in (found.get("annotations") or {}).items()}
            return notes, _epoch(found.get("activeAt"))
        if self.rules is None:
            try:
                self.rules = self.client.alerting_rules()
            except QueryError:
                self.rules = []
        rule = _rule_of(self.rules, labels)
        notes = rule.get("annotations") or {}
        return {str(k): fill(str(v), labels) for k, v in notes.items()}, None


def _alert(
    labels: Mapping[str, str],
    notes: Mapping[str, str],
    since: float | None,
    until: float | None = None,
) -> FiringAlert:
    return FiringAlert(
        name=labels.get("alertname", ""),
        severity=labels.get("severity", ""),
        metric=labels.get("metric"),
        tenant=labels.get("tenant") or None,
        summary=notes.get("summary", ""),
        description=notes.get("description", ""),
        runbook_url=notes.get("runbook_url"),
        since=since,
        until=until,
    )


def alerts_at(client: PromClient, at: float, start: float) -> list[FiringAlert]:
    """The alerts firing at `at` (pages first), then those that fired in [`start`, `at`]
    but not at `at` (`until`: their last firing sample seen, most recent first)."""
    firing = {_key(labels): labels for labels, _ in client.query(FIRING, at)}
    step = min(LOOKBACK_S, max(1.0, (at - start) / 1000))
    in_range = client.query_range(FIRING, start, at, step) if at > start else []
    first_seen: dict[frozenset[tuple[str, str]], float] = {}
    resolved: dict[frozenset[tuple[str, str]], tuple[dict[str, str], float, float]] = {}
    for series in in_range:
        if not series.times:
            continue
        key = _key(series.labels)
        first_seen[key] = min(first_seen.get(key, series.times[0]), series.times[0])
        if key not in firing:
            resolved[key] = (series.labels, series.times[0], series.times[-1])
    notes = _Annotations(client)
    now: list[FiringAlert] = []
    for key, labels in firing.items():
        text, active_at = notes.of(labels)
        now.append(_alert(labels, text, active_at or first_seen.get(key)))
    now.sort(key=lambda a: (not is_page(a.severity), a.name, a.metric or "", a.tenant or ""))
    gone = [
        _alert(labels, notes.of(labels)[0], since, until)
        for labels, since, until in resolved.values()
    ]
    gone.sort(key=lambda a: (-(a.until or 0), a.name, a.metric or ""))
    return now + gone
