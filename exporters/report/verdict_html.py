"""The report's first screen: one line per tier with its verdict (fine / watch / paging),
what changed against the 7-day baseline, the slice the change comes from, the firing
alerts with their runbook text, and links to the worst traces further down the page."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from html import escape

from exporters.report.dashboards import Panel
from exporters.report.units import format_value
from exporters.report.verdict import FiringAlert, Reading, TierVerdict, Verdict

SHOWN_FINDINGS = 2
SHOWN_LINKS = 3


def _fmt(value: float | None, stat: Panel | None) -> str:
    if value is None:
        return "–"
    if stat is not None and stat.unit not in (None, "", "none", "short"):
        return format_value(value, stat.unit, stat.decimals)
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def _when(epoch: float, now: float) -> str:
    clock = datetime.fromtimestamp(epoch, UTC).strftime("%H:%M UTC")
    minutes = max(0, round((now - epoch) / 60))
    ago = f"{minutes} min" if minutes < 120 else f"{minutes / 60:.1f} h"
    return f"since {clock} ({ago})"


def reading_text(reading: Reading, stat: Panel | None, now: float, reasons: tuple[str, ...]) -> str:
    """`faithfulness 0.62 (95% CI 0.55–0.69) vs 0.81 over 7d: −0.19, worse since ...`."""
    parts = [f"<b>{escape(reading.metric)}</b> {escape(_fmt(reading.hour, stat))}"]
    if reading.hour_low is not None and reading.hour_high is not None:
        low, high = _fmt(reading.hour_low, stat), _fmt(reading.hour_high, stat)
        parts.append(f" (95% CI {escape(low)} to {escape(high)})")
    if reading.week is not None:
        parts.append(f" vs {escape(_fmt(reading.week, stat))} over 7d")
    delta = reading.delta
    if delta is not None:
        parts.append(f": {'+' if delta >= 0 else '−'}{abs(delta):.3g}")
    if reading.worse_since is not None:
        parts.append(f", worse {escape(_when(reading.worse_since, now))}")
    if reasons:
        parts.append(f' <span class="why">— {escape("; ".join(reasons))}</span>')
    return "".join(parts)


def _changed(verdict: TierVerdict, stats: Mapping[str, Panel], now: float) -> str:
    if verdict.level == "no data":
        return f'<span class="why">{escape(verdict.tier.empty_reason or "no data yet")}</span>'
    lines = [
        reading_text(f.reading, stats.get(f.reading.metric), now, f.reasons)
        for f in verdict.findings[:SHOWN_FINDINGS]
    ]
    more = len(verdict.findings) - SHOWN_FINDINGS
    if more > 0:
        lines.append(f"and {more} more metric{'s' if more > 1 else ''} of this tier")
    if not lines:
        lines.append(
            f"no change beyond noise ({verdict.with_data} of {len(verdict.tier.metrics)} "
            "metrics with data)"
        )
    return "<br>".join(lines)


def _slices(verdict: TierVerdict) -> str:
    if not verdict.slices:
        return '<span class="none">–</span>'
    return "<br>".join(
        f"<b>{escape(s.slice)}</b>: {s.share * 100:.0f}% of the {escape(s.metric)} change"
        for s in verdict.slices[:SHOWN_FINDINGS]
    )


def alert_html(alert: FiringAlert, now: float) -> str:
    where = f" ({escape(alert.metric)})" if alert.metric else ""
    tenant = f", tenant {escape(alert.tenant)}" if alert.tenant else ""
    since = f", {escape(_when(alert.since, now))}" if alert.since is not None else ""
    if alert.until is not None:
        clock = datetime.fromtimestamp(alert.until, UTC).strftime("%H:%M UTC")
        since = f", resolved: last firing at {escape(clock)}"
    link = (
        f' <a class="runbook-link" href="{escape(alert.runbook_url)}">runbook</a>'
        if alert.runbook_url
        else ""
    )
    state = "firing" if alert.firing else "resolved"
    return (
        f'<div class="alert" data-severity="{escape(alert.severity)}" data-state="{state}">'
        f'<span class="sev">{escape(alert.severity)}</span> <b>{escape(alert.name)}</b>{where}'
        f'{tenant}{since}{link}<div class="summary">{escape(alert.summary)}</div>'
        f'<div class="runbook" title="click to read all">{escape(alert.description)}</div></div>'
    )


def _alerts(verdict: TierVerdict, now: float) -> str:
    if not verdict.alerts:
        return '<span class="none">none firing</span>'
    return "".join(alert_html(a, now) for a in verdict.alerts)


def _links(verdict: TierVerdict, worst: Mapping[str, str]) -> str:
    wanted = [a.metric for a in verdict.alerts if a.metric]
    wanted += [f.reading.metric for f in verdict.findings]
    wanted += list(verdict.tier.metrics)
    shown: list[str] = []
    for metric in wanted:
        if metric in worst and metric not in shown:
            shown.append(metric)
    if not shown:
        return '<span class="none">–</span>'
    return " ".join(
        f'<a class="worst" href="#{escape(worst[m])}">{escape(m)}</a>' for m in shown[:SHOWN_LINKS]
    )


def _many(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def headline(verdict: Verdict) -> str:
    counts: dict[str, int] = {}
    for tier in verdict.tiers:
        counts[tier.level] = counts.get(tier.level, 0) + 1
    order = ("paging", "watch", "fine", "no data")
    said = ", ".join(f"{counts[level]} {level}" for level in order if counts.get(level))
    if verdict.other_alerts:
        said += f"; {len(verdict.other_alerts)} other alert(s) firing"
    pages, tickets = verdict.pages_and_tickets()
    if pages or tickets:
        said += f"; firing: {_many(pages, 'page')}, {_many(tickets, 'ticket')}"
    if verdict.resolved:
        said += f"; {len(verdict.resolved)} resolved in range"
    word = {"paging": "PAGING", "watch": "WATCH", "fine": "FINE", "no data": "NO DATA"}
    return f"Quality: {word[verdict.level]} — tiers: {said or 'none'}"


def verdict_html(
    verdict: Verdict,
    stats: Mapping[str, Panel],
    worst: Mapping[str, str],
    now: float,
    basis: str,
) -> str:
    """The section; `worst` maps a metric to the id of its worst-traces table on the page;
    `basis` says what the verdict was computed from (shown under the headline)."""
    rows = []
    for tier in verdict.tiers:
        rows.append(
            f'<tr class="tier" data-level="{tier.level}" data-tier="{escape(tier.tier.title)}">'
            f'<td><span class="badge">{tier.level}</span></td>'
            f'<td class="name"><a href="#{escape(tier.tier.anchor)}">{escape(tier.tier.title)}</a>'
            f'</td><td class="changed">{_changed(tier, stats, now)}</td>'
            f'<td class="slice">{_slices(tier)}</td><td class="alerts">{_alerts(tier, now)}</td>'
            f'<td class="links">{_links(tier, worst)}</td></tr>'
        )
    other = ""
    if verdict.other_alerts:
        other = (
            '<div class="other-alerts"><b>Firing on no quality metric:</b>'
            + "".join(alert_html(a, now) for a in verdict.other_alerts)
            + "</div>"
        )
    if verdict.resolved:
        other += (
            '<div class="resolved-alerts"><b>Resolved in range</b> (fired, no longer firing '
            "at the report's time; not counted):"
            + "".join(alert_html(a, now) for a in verdict.resolved)
            + "</div>"
        )
    return (
        f'<section id="verdict" class="verdict" data-level="{verdict.level}">'
        f'<h2>{escape(headline(verdict))}</h2><p class="meta">{escape(basis)}</p>'
        '<table class="tiers"><thead><tr><th>verdict</th><th>tier</th>'
        "<th>what changed (last 1h against the 7-day baseline)</th><th>top slice</th>"
        "<th>firing alerts and runbook</th><th>worst traces</th></tr></thead><tbody>"
        + "".join(rows)
        + f"</tbody></table>{other}</section>"
    )
